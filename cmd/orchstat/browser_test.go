package main

// The HTML pages of report and simulate (issue 16), loaded from disk in a
// real headless Chromium: they must make no network request and log no
// error, their numbers must read back from the rendered DOM as the JSON
// output gives them, they must fit a 400-pixel window and print on A4
// with nothing cut off, and every chart needs a name and its data table.
// CI installs Debian's chromium (.ci/run) and there the tests must not skip.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"maps"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/reports/render"
)

// browserTimeout bounds each test's browser, so that a hung Chromium fails
// the test instead of hanging the suite.
const browserTimeout = 90 * time.Second

// shotWidths are the viewport widths the pages are shot at: a desktop
// window and a narrow phone-sized one. The height is shotHeight.
var shotWidths = []int64{1280, 400}

const shotHeight = 900

// chromiumPath is the browser to drive: $ORCHSTAT_CHROMIUM, else chromium
// (Debian's name) or chromium-browser on PATH; "" when there is none.
func chromiumPath() string {
	if p := os.Getenv("ORCHSTAT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// needChromium returns the browser's path, or skips the test under -short
// or when there is no browser. With CI or ORCHSTAT_REQUIRE_CHROMIUM=1 set
// (.ci/run sets it) a missing browser fails the test instead: CI installs
// it, and a skip there would hide a broken page.
func needChromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test; go test ./... runs it (skipped under -short)")
	}
	p := chromiumPath()
	if p == "" {
		if os.Getenv("CI") != "" || os.Getenv("ORCHSTAT_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no Chromium, and CI or ORCHSTAT_REQUIRE_CHROMIUM=1 is set, so the browser test must run (.ci/run installs Debian's chromium; or set ORCHSTAT_CHROMIUM)")
		}
		t.Skip("no Chromium on PATH and ORCHSTAT_CHROMIUM unset: apt-get install chromium to run the browser test")
	}
	return p
}

// startBrowser starts a headless Chromium for the test and returns its
// context; the browser is killed when the test ends or browserTimeout
// passes.
func startBrowser(t *testing.T, exe string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		// CI runs as root, where Chromium refuses to start sandboxed.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancel()
	})
	// Start it now, so that a browser that cannot start says so here.
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return browserCtx
}

// screenshotDir is where screenshots go: $ORCHSTAT_SCREENSHOTS (made if
// missing) so that a person or CI can keep them, else a directory removed
// with the test.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ORCHSTAT_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// finding is one thing a page did that a self-contained, error-free page
// must not do.
type finding struct {
	Kind   string // console, exception, log or request
	Detail string
}

func (f finding) String() string { return f.Kind + ": " + f.Detail }

// pageResult is what the browser made of a page. The harness returns it
// rather than failing, so that a test can also assert that a bad page is
// caught.
type pageResult struct {
	Findings []finding
	// Elements holds the data-* attributes (names without "data-") of
	// every element carrying numbers, in document order.
	Elements []map[string]string
	// ScrollWidth and ScrollHeight are the document's at each viewport
	// width.
	ScrollWidth, ScrollHeight map[int64]int64
	// Shots holds the screenshot files by viewport width.
	Shots map[int64]string
	// Grey is a screenshot at the first width as someone who sees no
	// colour would: for a person to check that the charts still read.
	Grey string
	// PrintClipped lists what print would cut off at A4's width.
	PrintClipped []string
	// Unexplained lists the charts without a name for screen readers or
	// without their data table in their figure.
	Unexplained []string
	PDF         []byte
}

// recorder collects a tab's findings from its events.
type recorder struct {
	pageURL string
	mu      sync.Mutex
	found   []finding
}

// listen runs in the tab's event loop, in the order Chrome sent the
// events, so it only records; it must not run commands.
func (r *recorder) listen(ev any) {
	switch ev := ev.(type) {
	case *cdpruntime.EventConsoleAPICalled:
		switch ev.Type {
		case cdpruntime.ConsoleAPICalledTypeError, cdpruntime.ConsoleAPICalledTypeWarning, cdpruntime.ConsoleAPICalledTypeAssert:
			r.add("console", fmt.Sprintf("console.%s(%s)", ev.Type, remoteArgs(ev.Args)))
		}
	case *cdpruntime.EventExceptionThrown:
		r.add("exception", exceptionText(ev.ExceptionDetails))
	case *cdplog.EventEntryAdded:
		if e := ev.Entry; e != nil && e.Level == cdplog.EntryLevelError {
			r.add("log", strings.TrimSpace(fmt.Sprintf("%s: %s %s", e.Source, e.Text, e.URL)))
		}
	case *network.EventRequestWillBeSent:
		if ev.Request != nil && !r.ownURL(ev.Request.URL) {
			r.add("request", ev.Request.URL)
		}
	}
}

func (r *recorder) add(kind, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.found = append(r.found, finding{kind, detail})
}

func (r *recorder) findings() []finding {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.found)
}

// ownURL reports whether a request stays inside the page: the page itself
// (a fragment aside) or an inline data: or about: URL.
func (r *recorder) ownURL(u string) bool {
	if strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "about:") {
		return true
	}
	base, _, _ := strings.Cut(u, "#")
	return base == r.pageURL
}

func remoteArgs(args []*cdpruntime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		switch {
		case a == nil:
		case len(a.Value) > 0:
			parts = append(parts, string(a.Value))
		default:
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, ", ")
}

func exceptionText(d *cdpruntime.ExceptionDetails) string {
	if d == nil {
		return "(no details)"
	}
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		s += " " + d.Exception.Description
	}
	return fmt.Sprintf("%s (%s:%d:%d)", s, d.URL, d.LineNumber+1, d.ColumnNumber+1)
}

// collectJS reads every element that carries numbers by the page
// contract into a JSON array of its data-* attributes.
const collectJS = `JSON.stringify(Array.from(
  document.querySelectorAll('[data-metric],[data-overview],[data-provider],[data-policy],[data-day]'),
  function (e) {
    var o = {};
    for (var i = 0; i < e.attributes.length; i++) {
      var a = e.attributes[i];
      if (a.name.indexOf('data-') === 0) o[a.name.slice(5)] = a.value;
    }
    return o;
  }))`

// chartsJS lists the charts (outermost SVGs) that a screen reader cannot
// name (role="img" with an aria-label or a <title>) or whose <figure> does
// not hold their data table, as issue 16 asks of every chart.
const chartsJS = `(function () {
  var out = [];
  document.querySelectorAll('svg').forEach(function (s, i) {
    if (s.parentElement.closest('svg')) return;
    var name = s.getAttribute('aria-label') || (s.querySelector(':scope > title') || {}).textContent || '';
    var what = 'chart ' + (i + 1) + (name ? ' "' + name.trim().slice(0, 60) + '"' : '');
    if (s.getAttribute('role') !== 'img' || !name.trim()) out.push(what + ': no role="img" with an aria-label or a <title>');
    var f = s.closest('figure');
    if (!f || !f.querySelector('table')) out.push(what + ': no data table in its <figure>');
  });
  return out;
})()`

// inspectPage opens the page file in a new tab of the browser, records
// what it does, reads its numbers, shoots it at each of shotWidths into
// shotDir as name-WIDTH.png, and prints it on A4 to name.pdf there.
func inspectPage(t *testing.T, browserCtx context.Context, file, shotDir, name string) (pageResult, error) {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		return pageResult{}, err
	}
	rec := &recorder{pageURL: (&url.URL{Scheme: "file", Path: abs}).String()}
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithListener(rec.listen))
	defer cancel()
	res := pageResult{ScrollWidth: map[int64]int64{}, ScrollHeight: map[int64]int64{}, Shots: map[int64]string{}}
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(shotWidths[0], shotHeight),
		chromedp.Navigate(rec.pageURL),
	); err != nil {
		return res, fmt.Errorf("loading %s: %w", rec.pageURL, err)
	}
	if res.Unexplained, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](chartsJS)); err != nil {
		return res, fmt.Errorf("reading the charts of %s: %w", file, err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](collectJS))
	if err != nil {
		return res, fmt.Errorf("reading the numbers of %s: %w", file, err)
	}
	if err := json.Unmarshal([]byte(raw), &res.Elements); err != nil {
		return res, fmt.Errorf("reading the numbers of %s: %w", file, err)
	}
	for _, w := range shotWidths {
		size, shot, err := shootAt(ctx, w)
		if err != nil {
			return res, fmt.Errorf("%s at %d px: %w", file, w, err)
		}
		path := filepath.Join(shotDir, fmt.Sprintf("%s-%d.png", name, w))
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			return res, err
		}
		t.Logf("screenshot of %s at %d px: %s", name, w, path)
		res.ScrollWidth[w], res.ScrollHeight[w], res.Shots[w] = size[0], size[1], path
	}
	if res.Grey, err = shootGrey(ctx, shotDir, name); err != nil {
		return res, fmt.Errorf("%s in greyscale: %w", file, err)
	}
	t.Logf("screenshot of %s in greyscale: %s", name, res.Grey)
	if res.PrintClipped, err = printClipped(ctx); err != nil {
		return res, fmt.Errorf("%s as printed: %w", file, err)
	}
	if res.PDF, err = chromedp.Run(ctx, chromedp.PrintToPDF(chromedp.PDFPaper(chromedp.PaperA4))); err != nil {
		return res, fmt.Errorf("printing %s: %w", file, err)
	}
	pdf := filepath.Join(shotDir, name+".pdf")
	if err := os.WriteFile(pdf, res.PDF, 0o644); err != nil {
		return res, err
	}
	t.Logf("%s printed on A4: %s", name, pdf)
	// The listener saw every event sent before the last reply (it runs in
	// order in the tab's loop), so the findings are complete here.
	res.Findings = rec.findings()
	return res, nil
}

// shootAt resizes the viewport to width and returns the document's
// scrollWidth and scrollHeight, and a full-page PNG screenshot.
func shootAt(ctx context.Context, width int64) ([]int64, []byte, error) {
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, shotHeight)); err != nil {
		return nil, nil, err
	}
	size, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](
		`[document.documentElement.scrollWidth, document.documentElement.scrollHeight]`))
	if err != nil {
		return nil, nil, err
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	return size, shot, err
}

// shootGrey takes a full-page screenshot at the first of shotWidths with
// Chrome's achromatopsia emulation (no colour vision) into shotDir as
// name-WIDTH-grey.png, and turns the emulation off again.
func shootGrey(ctx context.Context, shotDir, name string) (string, error) {
	grey := func(kind emulation.SetEmulatedVisionDeficiencyType) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedVisionDeficiency, emulation.SetEmulatedVisionDeficiencyParams{Type: kind})
		return err
	}
	if err := grey(emulation.SetEmulatedVisionDeficiencyTypeAchromatopsia); err != nil {
		return "", err
	}
	defer grey(emulation.SetEmulatedVisionDeficiencyTypeNone)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(shotWidths[0], shotHeight)); err != nil {
		return "", err
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "", err
	}
	path := filepath.Join(shotDir, fmt.Sprintf("%s-%d-grey.png", name, shotWidths[0]))
	return path, os.WriteFile(path, shot, 0o644)
}

// printWidthJS is the width in CSS pixels that printing on A4 lays the
// page out in: 210 mm less the side margins of the page's @page rules
// (print honours them), or of Chrome's default 1 cm.
const printWidthJS = `(function () {
  var left = '1cm', right = '1cm';
  function walk(rules) {
    for (var i = 0; i < rules.length; i++) {
      var r = rules[i];
      if (r instanceof CSSPageRule) {
        if (r.style.marginLeft) left = r.style.marginLeft;
        if (r.style.marginRight) right = r.style.marginRight;
      } else if (r.cssRules) {
        walk(r.cssRules);
      }
    }
  }
  for (var i = 0; i < document.styleSheets.length; i++) walk(document.styleSheets[i].cssRules);
  function px(len) {
    var e = document.createElement('div');
    e.style.cssText = 'position:absolute;width:' + len;
    document.body.appendChild(e);
    var w = e.getBoundingClientRect().width;
    e.remove();
    return w;
  }
  return Math.floor(px('210mm') - px(left) - px(right));
})()`

// clippedJS lists the HTML elements that cut off their content sideways
// (a scroll wrapper cannot scroll on paper), a document wider than the
// window, and the outermost elements that stick out of it, each with the
// heading of its section.
const clippedJS = `(function () {
  var out = [], d = document.documentElement;
  function where(e) {
    var s = e.closest('section, details, figure') || document.body;
    var h = s.querySelector('h1, h2, h3, summary, figcaption');
    return e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') +
      (h ? ' under "' + h.textContent.trim().slice(0, 60) + '"' : '');
  }
  var right = d.clientWidth + 1;
  if (d.scrollWidth > right) out.push('the page: ' + d.scrollWidth + ' px wide in ' + d.clientWidth);
  document.querySelectorAll('body *').forEach(function (e) {
    if (!(e instanceof HTMLElement)) return;
    var p = e.parentElement;
    if (e.getBoundingClientRect().right > right && p.getBoundingClientRect().right <= right) {
      out.push(where(e) + ': reaches ' + Math.round(e.getBoundingClientRect().right) + ' px of ' + d.clientWidth);
    }
    if (getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1) {
      out.push(where(e) + ': ' + e.scrollWidth + ' px wide in ' + e.clientWidth);
    }
  });
  return out;
})()`

// printClipped lays the page out as printed on A4 (print media, the
// width between A4's margins) and lists what would be cut off; then it
// restores the screen.
func printClipped(ctx context.Context) ([]string, error) {
	media := func(m string) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: m})
		return err
	}
	if err := media("print"); err != nil {
		return nil, err
	}
	defer media("")
	width, err := chromedp.Run(ctx, chromedp.Evaluate[int64](printWidthJS))
	if err != nil {
		return nil, err
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, shotHeight)); err != nil {
		return nil, err
	}
	return chromedp.Run(ctx, chromedp.Evaluate[[]string](clippedJS))
}

// checkClean fails the test on any finding, on a page wider than its
// window, on a screenshot that is not an image of the window's width, on
// anything printing would cut off, on a chart without a name or a data
// table, and on a print that is not a PDF.
func checkClean(t *testing.T, res pageResult) {
	t.Helper()
	for _, f := range res.Findings {
		t.Errorf("page %s", f)
	}
	for _, w := range shotWidths {
		// One pixel of slack for subpixel rounding; wide tables must
		// scroll inside their own wrapper, not widen the page.
		if sw := res.ScrollWidth[w]; sw > w+1 {
			t.Errorf("at %d px the page is %d px wide: something overflows horizontally", w, sw)
		}
		b, err := os.ReadFile(res.Shots[w])
		if err != nil {
			t.Error(err)
			continue
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
		switch {
		case err != nil:
			t.Errorf("screenshot %s: %v", res.Shots[w], err)
		case int64(cfg.Width) != w || int64(cfg.Height) < res.ScrollHeight[w]:
			t.Errorf("screenshot %s: %s %dx%d, want %d px wide and the page's %d px high",
				res.Shots[w], format, cfg.Width, cfg.Height, w, res.ScrollHeight[w])
		}
	}
	for _, c := range res.PrintClipped {
		t.Errorf("printed on A4, %s: the rest is cut off", c)
	}
	for _, c := range res.Unexplained {
		t.Errorf("%s", c)
	}
	if !bytes.HasPrefix(res.PDF, []byte("%PDF-")) {
		t.Errorf("printing on A4 gave %d bytes that are not a PDF", len(res.PDF))
	}
}

// numberText is a number as the page contract writes it: FormatFloat 'g',
// -1, and "" for none.
func numberText(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// sameNumber reports whether an attribute (has: present at all) shows
// want. The text should match exactly; a number written another way
// ("1000000" for "1e+06") passes within 1e-12 relative.
func sameNumber(text string, has bool, want *float64) bool {
	if want == nil {
		return !has || text == ""
	}
	if !has {
		return false
	}
	if text == numberText(want) {
		return true
	}
	got, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return false
	}
	return math.Abs(got-*want) <= 1e-12*math.Max(math.Abs(got), math.Abs(*want))
}

// checkAttrs compares the named attributes of a page element with the
// JSON's numbers, and says where each differs.
func checkAttrs(where string, e map[string]string, want map[string]*float64) []string {
	var bad []string
	for _, attr := range slices.Sorted(maps.Keys(want)) {
		text, has := e[attr]
		if !sameNumber(text, has, want[attr]) {
			shown := strconv.Quote(text)
			if !has {
				shown = "no data-" + attr
			}
			bad = append(bad, fmt.Sprintf("%s: data-%s is %s, JSON has %q", where, attr, shown, numberText(want[attr])))
		}
	}
	return bad
}

// jsonMetric is a metric as report --format json writes it: counts carry
// only a value, ratios a numerator and denominator too.
type jsonMetric struct {
	Value       *float64 `json:"value"`
	Numerator   *float64 `json:"numerator"`
	Denominator *float64 `json:"denominator"`
}

func (m jsonMetric) attrs() map[string]*float64 {
	return map[string]*float64{"value": m.Value, "numerator": m.Numerator, "denominator": m.Denominator}
}

// reportNumbers is the part of report --format json the page contract
// covers.
type reportNumbers struct {
	Overview   map[string]json.RawMessage `json:"overview"`
	Metrics    map[string]jsonMetric      `json:"metrics"`
	Breakdowns struct {
		ByProvider []map[string]json.RawMessage `json:"by_provider"`
		ByDay      []struct {
			Day     string                `json:"day"`
			Metrics map[string]jsonMetric `json:"metrics"`
		} `json:"by_day"`
	} `json:"breakdowns"`
}

// compareReport compares the numbers read from a report page with report
// --format json's (raw), and lists each difference, and each metric, day
// and provider row of the JSON that the page does not show: the page holds
// every number the JSON does, the other systems' and model calls' metrics
// too when there are none (unlike the table report).
func compareReport(elems []map[string]string, raw []byte) []string {
	var want reportNumbers
	if err := json.Unmarshal(raw, &want); err != nil {
		return []string{"report JSON: " + err.Error()}
	}
	days := map[string]map[string]jsonMetric{}
	for _, d := range want.Breakdowns.ByDay {
		days[d.Day] = d.Metrics
	}
	providers := map[string]map[string]json.RawMessage{}
	for _, p := range want.Breakdowns.ByProvider {
		providers[rawString(p["provider"])+" / "+rawString(p["model"])] = p
	}
	seen := map[string]bool{}
	var bad []string
	for i, e := range elems {
		where := describeElement(i, e)
		switch {
		case hasAttr(e, "policy"):
			bad = append(bad, where+": a simulate figure on a report page")
		case hasAttr(e, "provider"):
			bad = append(bad, checkProviderElement(where, e, providers, seen)...)
		case hasAttr(e, "day"):
			m, ok := days[e["day"]][e["metric"]]
			if !ok {
				bad = append(bad, where+": no such day and metric in the JSON's breakdowns.by_day")
				continue
			}
			seen["day "+e["day"]] = true
			bad = append(bad, checkAttrs(where, e, m.attrs())...)
		case hasAttr(e, "overview"):
			bad = append(bad, checkOverviewElement(where, e, want.Overview)...)
		default:
			m, ok := want.Metrics[e["metric"]]
			if !ok {
				bad = append(bad, where+": no such metric in the JSON's metrics")
				continue
			}
			seen["metric "+e["metric"]] = true
			bad = append(bad, checkAttrs(where, e, m.attrs())...)
		}
	}
	var need []string
	for name := range want.Metrics {
		need = append(need, "metric "+name)
	}
	for day := range days {
		need = append(need, "day "+day)
	}
	for key := range providers {
		need = append(need, "provider "+key)
	}
	return append(bad, missing(need, seen)...)
}

// missing lists, sorted, what the JSON has and the page never showed.
func missing(need []string, seen map[string]bool) []string {
	var bad []string
	for _, n := range slices.Sorted(slices.Values(need)) {
		if !seen[n] {
			bad = append(bad, "the page never shows "+n)
		}
	}
	return bad
}

// checkProviderElement compares an element of a by-provider row: its
// requests, and the row's metric it names, if any.
func checkProviderElement(where string, e map[string]string, providers map[string]map[string]json.RawMessage, seen map[string]bool) []string {
	key := e["provider"] + " / " + e["model"]
	row, ok := providers[key]
	if !ok {
		return []string{where + ": no such provider and model in the JSON's breakdowns.by_provider"}
	}
	var bad []string
	if text, has := e["requests"]; has {
		seen["provider "+key] = true
		if !sameNumber(text, true, rawNumber(row["requests"])) {
			bad = append(bad, fmt.Sprintf("%s: data-requests is %q, JSON has %s", where, text, row["requests"]))
		}
	}
	if name, has := e["metric"]; has {
		m, ok := rawMetric(row[name])
		if !ok {
			return append(bad, fmt.Sprintf("%s: the JSON's row has no number %q", where, name))
		}
		bad = append(bad, checkAttrs(where, e, m.attrs())...)
	}
	return bad
}

// checkOverviewElement compares an overview figure: a number, or text
// such as a timestamp, which must match exactly.
func checkOverviewElement(where string, e map[string]string, overview map[string]json.RawMessage) []string {
	raw, ok := overview[e["overview"]]
	if !ok {
		return []string{where + ": no such field in the JSON's overview"}
	}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
		if got := e["value"]; got != rawString(raw) {
			return []string{fmt.Sprintf("%s: data-value is %q, JSON has %s", where, got, raw)}
		}
		return nil
	}
	return checkAttrs(where, e, map[string]*float64{"value": rawNumber(raw)})
}

// rawMetric reads a JSON metric object, or a bare number as a value.
func rawMetric(raw json.RawMessage) (jsonMetric, bool) {
	var m jsonMetric
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return m, json.Unmarshal(raw, &m) == nil
	}
	if len(raw) == 0 {
		return m, false
	}
	m.Value = rawNumber(raw)
	return m, m.Value != nil || string(bytes.TrimSpace(raw)) == "null"
}

// rawNumber is a JSON number, or nil for null or anything else.
func rawNumber(raw json.RawMessage) *float64 {
	var v *float64
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

func rawString(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

func hasAttr(e map[string]string, name string) bool {
	_, ok := e[name]
	return ok
}

// describeElement names a page element by its position and data-*
// attributes, for messages.
func describeElement(i int, e map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(e)) {
		parts = append(parts, fmt.Sprintf("data-%s=%q", k, e[k]))
	}
	return fmt.Sprintf("element %d [%s]", i, strings.Join(parts, " "))
}

// simMetric is a simulate figure: a value and its 95% interval.
type simMetric struct {
	Value *float64 `json:"value"`
	Lo    *float64 `json:"lo"`
	Hi    *float64 `json:"hi"`
}

func (m simMetric) attrs() map[string]*float64 {
	return map[string]*float64{"value": m.Value, "low": m.Lo, "high": m.Hi}
}

// simulateFigures reads simulate --format json's baseline and policies
// into figures by policy name and metric; a metric is any field that is an
// object with a value, lo and hi. shown reports whether the page must
// show a metric: as simulate's table, cost only when some episode
// recorded one, the L2 loops' figures only when there are loops, and the
// L3 diagnoses only when runs had L3 steps.
func simulateFigures(raw []byte) (figures map[string]map[string]simMetric, shown func(string) bool, err error) {
	var out struct {
		Baseline map[string]json.RawMessage   `json:"baseline"`
		Policies []map[string]json.RawMessage `json:"policies"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, err
	}
	if out.Baseline == nil {
		return nil, nil, fmt.Errorf("simulate JSON has no baseline")
	}
	var base struct {
		HasCost bool `json:"has_cost"`
		L2Loops int  `json:"l2_loops"`
		L3Runs  int  `json:"l3_runs"`
	}
	if err := json.Unmarshal(raw, &struct {
		Baseline any `json:"baseline"`
	}{&base}); err != nil {
		return nil, nil, err
	}
	shown = func(name string) bool {
		switch name {
		case "cost_usd":
			return base.HasCost
		case "l2_success_rate", "l2_iterations", "escalations", "l2_non_improving_stops":
			return base.L2Loops > 0
		case "diagnoses":
			return base.L3Runs > 0
		}
		return true
	}
	figures = map[string]map[string]simMetric{}
	for _, row := range append([]map[string]json.RawMessage{out.Baseline}, out.Policies...) {
		policy := rawString(row["policy"])
		figures[policy] = map[string]simMetric{}
		for name, v := range row {
			var m simMetric
			if !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) || json.Unmarshal(v, &m) != nil {
				continue
			}
			if m.Value != nil && m.Lo != nil && m.Hi != nil {
				figures[policy][name] = m
			}
		}
	}
	return figures, shown, nil
}

// compareSimulate compares the figures read from a simulate page with
// simulate --format json's (raw), and lists each difference and each
// policy's metric (that simulateFigures says it shows) that the page does
// not show.
func compareSimulate(elems []map[string]string, raw []byte) []string {
	figures, shown, err := simulateFigures(raw)
	if err != nil {
		return []string{"simulate JSON: " + err.Error()}
	}
	seen := map[string]bool{}
	var bad []string
	for i, e := range elems {
		where := describeElement(i, e)
		m, ok := figures[e["policy"]][e["metric"]]
		switch {
		case !hasAttr(e, "policy") || !hasAttr(e, "metric"):
			bad = append(bad, where+": a simulate figure needs data-policy and data-metric")
		case !ok:
			bad = append(bad, where+": no such policy and metric in the JSON")
		default:
			seen[e["policy"]+" / "+e["metric"]] = true
			bad = append(bad, checkAttrs(where, e, m.attrs())...)
		}
	}
	var need []string
	for policy, ms := range figures {
		for name := range ms {
			if shown(name) {
				need = append(need, policy+" / "+name)
			}
		}
	}
	return append(bad, missing(need, seen)...)
}

// TestBrowserHarnessOnFixture runs the harness on hand-written pages: a
// clean one in the page contract must pass, and one that fetches, logs,
// throws and overflows must be caught on each count, as must a JSON whose
// numbers the page does not show.
func TestBrowserHarnessOnFixture(t *testing.T) {
	exe := needChromium(t)
	want, err := os.ReadFile("testdata/browser/fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx := startBrowser(t, exe)
	dir := screenshotDir(t)
	t.Run("clean", func(t *testing.T) {
		res, err := inspectPage(t, ctx, "testdata/browser/fixture.html", dir, "fixture")
		if err != nil {
			t.Fatal(err)
		}
		checkClean(t, res)
		for _, p := range compareReport(res.Elements, want) {
			t.Error(p)
		}
		// A number that differs, and a metric the page lacks.
		tampered := strings.Replace(string(want), `"value": 0.35714285714285715`, `"value": 0.4`, 1)
		tampered = strings.Replace(tampered, `"metrics": {`, `"metrics": {"ghost_rate": {"value": 1, "numerator": 1, "denominator": 1},`, 1)
		problems := compareReport(res.Elements, []byte(tampered))
		for _, needle := range []string{`data-day="2025-11-03"`, "never shows metric ghost_rate"} {
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, needle) }) {
				t.Errorf("comparing with a tampered JSON: no problem mentions %q; problems: %q", needle, problems)
			}
		}
	})
	t.Run("bad", func(t *testing.T) {
		res, err := inspectPage(t, ctx, "testdata/browser/fixture-bad.html", dir, "fixture-bad")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("findings: %q", res.Findings)
		for _, w := range []finding{
			{"request", "http://127.0.0.1:9/x.png"},
			{"console", `console.error("x")`},
		} {
			if !slices.Contains(res.Findings, w) {
				t.Errorf("the harness did not report %s", w)
			}
		}
		if !slices.ContainsFunc(res.Findings, func(f finding) bool {
			return f.Kind == "exception" && strings.Contains(f.Detail, "boom")
		}) {
			t.Error("the harness did not report the uncaught exception")
		}
		if sw := res.ScrollWidth[400]; sw <= 401 {
			t.Errorf("at 400 px the page's scrollWidth is %d; the 1000-pixel block should overflow", sw)
		}
		if len(res.PrintClipped) == 0 {
			t.Error("the harness did not report that printing on A4 cuts off the 1000-pixel block")
		}
		wantCharts := []string{`chart 1: no role="img" with an aria-label or a <title>`, "chart 1: no data table in its <figure>"}
		if !slices.Equal(res.Unexplained, wantCharts) {
			t.Errorf("charts reported %q, want %q", res.Unexplained, wantCharts)
		}
	})
}

// htmlAndJSON runs orchstat with args (a command and its flags) with
// --format json and with --format html -o, and returns the path of the
// page and the JSON.
func htmlAndJSON(t *testing.T, name string, args ...string) (page string, jsonOut []byte) {
	t.Helper()
	code, out, stderr := runCLI(t, "", append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("%s --format json: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	jsonOut = []byte(out)
	page = filepath.Join(t.TempDir(), name+".html")
	code, _, stderr = runCLI(t, "", append(args, "--format", "html", "-o", page)...)
	if code != 0 {
		t.Fatalf("%s --format html -o %s: exit %d: %s", strings.Join(args, " "), page, code, stderr)
	}
	return page, jsonOut
}

// TestBrowserReport loads report --format html of the bundled runs in
// Chromium and reads its numbers back against report --format json.
func TestBrowserReport(t *testing.T) {
	exe := needChromium(t)
	db := bundledStore(t)
	page, want := htmlAndJSON(t, "report", "--db", db, "report", "--no-ingest")
	res, err := inspectPage(t, startBrowser(t, exe), page, screenshotDir(t), "report")
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res)
	t.Logf("%d elements carry numbers", len(res.Elements))
	for _, p := range compareReport(res.Elements, want) {
		t.Error(p)
	}
}

// TestBrowserSimulate loads simulate --format html of the bundled runs
// (the baseline against one quick policy) in Chromium and reads its
// figures and intervals back against simulate --format json.
func TestBrowserSimulate(t *testing.T) {
	exe := needChromium(t)
	db := bundledStore(t)
	page, want := htmlAndJSON(t, "simulate", "--db", db, "simulate", "--no-ingest", "--max-retries", "1", "--seed", "7")
	res, err := inspectPage(t, startBrowser(t, exe), page, screenshotDir(t), "simulate")
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res)
	t.Logf("%d elements carry numbers", len(res.Elements))
	for _, p := range compareSimulate(res.Elements, want) {
		t.Error(p)
	}
}

// TestBrowserCompareSimulate checks the simulate comparison without a
// browser: a wrong interval end, a figure without its policy, and a
// figure the page lacks are caught; a cost the run never recorded need
// not show.
func TestBrowserCompareSimulate(t *testing.T) {
	raw := []byte(`{
	  "baseline": {"policy": "orchestrator", "has_cost": false, "l2_loops": 0, "l3_runs": 0,
	    "success_rate": {"value": 0.9, "lo": 0.9, "hi": 0.9, "exact": true},
	    "attempts": {"value": 120, "lo": 120, "hi": 120, "exact": true},
	    "cost_usd": {"value": 0, "lo": 0, "hi": 0, "exact": true}},
	  "policies": [{"policy": "orchestrator with max-retries 1",
	    "success_rate": {"value": 0.8, "lo": 0.7, "hi": 0.85, "exact": false},
	    "attempts": {"value": 100, "lo": 95, "hi": 104, "exact": false},
	    "cost_usd": {"value": 0, "lo": 0, "hi": 0, "exact": true},
	    "diff_from_baseline": {"success_rate": {"value": -0.1, "lo": -0.2, "hi": -0.05, "exact": false}}}]}`)
	page := []map[string]string{
		{"policy": "orchestrator", "metric": "success_rate", "value": "0.9", "low": "0.9", "high": "0.9"},
		{"policy": "orchestrator", "metric": "attempts", "value": "120", "low": "120", "high": "120"},
		{"policy": "orchestrator with max-retries 1", "metric": "success_rate", "value": "0.8", "low": "0.7", "high": "0.86"},
		{"metric": "attempts", "value": "100"},
	}
	problems := compareSimulate(page, raw)
	want := []string{
		`element 2 [data-high="0.86" data-low="0.7" data-metric="success_rate" data-policy="orchestrator with max-retries 1" data-value="0.8"]: data-high is "0.86", JSON has "0.85"`,
		`element 3 [data-metric="attempts" data-value="100"]: a simulate figure needs data-policy and data-metric`,
		"the page never shows orchestrator with max-retries 1 / attempts",
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

// firstScreenJS measures the page's first screen: every summary tile and
// the first chart, as rectangles from the top of the document.
const firstScreenJS = `(() => {
  const box = e => { const r = e.getBoundingClientRect(); return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, left: r.left, right: r.right, name: e.getAttribute('data-tile') || e.tagName}; };
  const chart = document.querySelector('figure svg.chart, figure svg[role="img"]');
  return JSON.stringify({
    tiles: [...document.querySelectorAll('[data-tile]')].map(box),
    chart: chart ? box(chart) : null,
    width: document.documentElement.scrollWidth,
  });
})()`

type screenBox struct {
	Top, Bottom, Left, Right float64
	Name                     string
}

// The report page's first screen, at 1280×800 with no scrolling, holds
// the summary's tiles and a chart; at 400 px the tiles stack and nothing
// is wider than the window. For the bundled runs at the end of their
// last day, and for the external records when they are here.
func TestBrowserReportFirstScreen(t *testing.T) {
	exe := needChromium(t)
	browser := startBrowser(t, exe)
	shots := screenshotDir(t)
	pages := map[string]string{}
	db := bundledStore(t)
	pages["bundled"] = filepath.Join(t.TempDir(), "bundled.html")
	if code, _, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--since", "2025-11-04T19:06:00Z", "--until", "2025-11-05T19:06:00Z",
		"--format", "html", "-o", pages["bundled"]); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if ext, err := filepath.Abs("../../../shared/testdata-external"); err == nil {
		if _, err := os.Stat(ext); err == nil {
			dir := t.TempDir()
			if err := os.CopyFS(filepath.Join(dir, "ext"), os.DirFS(ext)); err != nil {
				t.Fatal(err)
			}
			pages["external"] = filepath.Join(dir, "external.html")
			code, _, stderr := runCLIAt(t, time.Date(2026, 8, 4, 0, 0, 0, 0, time.UTC), "", "--db", filepath.Join(dir, "o.duckdb"),
				"report", "-q", filepath.Join(dir, "ext"), "--format", "html", "-o", pages["external"])
			if code != 0 && code != 1 {
				t.Fatalf("report of the external records: exit %d: %s", code, stderr)
			}
		}
	}
	for name, page := range pages {
		t.Run(name, func(t *testing.T) { checkPageFirstScreen(t, browser, shots, name, page) })
	}
}

// checkPageFirstScreen loads page at 1280×800 and 400×800, shoots each into
// shots, and fails unless every tile and a chart are within the first
// 800 px at 1280, and the tiles stack inside the window at 400.
func checkPageFirstScreen(t *testing.T, browser context.Context, shots, name, page string) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	abs, _ := filepath.Abs(page)
	measure := func(width, height int64) (tiles []screenBox, chart *screenBox, scrollWidth float64) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height), chromedp.Navigate((&url.URL{Scheme: "file", Path: abs}).String())); err != nil {
			t.Fatal(err)
		}
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](firstScreenJS))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Tiles []screenBox
			Chart *screenBox
			Width float64
		}
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(shots, fmt.Sprintf("first-screen-%s-%d.png", name, width))
		os.WriteFile(path, shot, 0o644)
		t.Logf("the first screen at %d px: %s", width, path)
		return m.Tiles, m.Chart, m.Width
	}
	tiles, chart, _ := measure(1280, 800)
	if len(tiles) < 2 {
		t.Fatalf("%d tiles, want the attention tile and a system's at least", len(tiles))
	}
	for _, b := range tiles {
		if b.Bottom > 800 {
			t.Errorf("tile %s ends at %.0f px, below the first 800", b.Name, b.Bottom)
		}
	}
	if chart == nil || chart.Bottom > 800 {
		t.Errorf("no chart within the first 800 px: %+v", chart)
	}
	tiles, _, width := measure(400, 800)
	if width > 400 {
		t.Errorf("at 400 px the page is %.0f px wide", width)
	}
	for i, b := range tiles {
		if b.Right > 400 || (i > 0 && b.Top < tiles[i-1].Bottom) {
			t.Errorf("at 400 px tile %s is not stacked inside the window: %+v", b.Name, b)
		}
	}
}

// firstScreenReport is a report the command cannot yet make from the
// bundled runs: an alert firing and one pending, three systems with
// changes marked, within noise and without a delta, days without data,
// and where; drawn by the renderer alone, so that the first screen is
// tested whatever the store holds.
func firstScreenReport() *reports.Report {
	p := func(v float64) *float64 { return &v }
	since := time.Date(2026, 1, 23, 0, 0, 0, 0, time.UTC)
	until, prev := since.AddDate(0, 0, 7), since.AddDate(0, 0, -7)
	var days []string
	var byDay []reports.DayRow
	for d := since; d.Before(until); d = d.AddDate(0, 0, 1) {
		days = append(days, d.Format(time.DateOnly))
		n := float64(200 + 10*len(days))
		byDay = append(byDay, reports.DayRow{Day: days[len(days)-1], Metrics: reports.Metrics{
			"provider_retry_rate": {Value: p(0.15 + 0.02*float64(len(days))), Numerator: p(n * (0.15 + 0.02*float64(len(days)))), Denominator: p(n)}}})
	}
	daily := func(counts ...int64) []reports.DayPoint {
		var out []reports.DayPoint
		for i, c := range counts {
			out = append(out, reports.DayPoint{Day: days[i], Count: c, Failed: c / 5, Retried: c / 3})
		}
		return out
	}
	rise := &reports.Change{Previous: p(0.18), Delta: p(0.07), Low: p(0.02), High: p(0.12), Significant: true}
	noise := &reports.Change{Previous: p(0.09), Delta: p(0.01), Low: p(-0.03), High: p(0.05)}
	return &reports.Report{GeneratedAt: until, Database: "/var/lib/orchstat/a-long-folder-name/orchstat.duckdb",
		Scope:      reports.Scope{RunsInStore: 376},
		Metrics:    reports.Metrics{"runs": {Value: p(364)}, "provider_retry_rate": {Value: p(0.25), Numerator: p(50), Denominator: p(200)}},
		Thresholds: []reports.Threshold{{Rule: "provider_retry_rate_high", Metric: "provider_retry_rate", Condition: "value > threshold", Threshold: 0.2, Crossed: true}},
		Breakdowns: reports.Breakdowns{ByDay: byDay},
		Summary: &reports.Summary{
			Window:   reports.Period{Since: &since, Until: until, Days: days},
			Previous: &reports.Period{Since: &prev, Until: since},
			Attention: reports.Attention{At: until, Rules: 13, Counts: map[string]int{"firing": 1, "pending": 1, "inactive": 11},
				Alerts: []reports.AttentionRow{
					{Rule: "provider_retry_rate_high", Severity: "warning", State: "firing", Metric: "provider_retry_rate",
						Value: p(0.25), Numerator: p(50), Denominator: p(200), Threshold: p(0.2), Condition: "value > threshold", Change: rise},
					{Rule: "call_failure_rate_high", Severity: "critical", State: "pending", Labels: map[string]string{"system": "claude-code"},
						Metric: "call_failure_rate", Value: p(0.1), Numerator: p(3), Denominator: p(30), Threshold: p(0.05), Condition: "value > threshold", Change: noise},
				}},
			Systems: []reports.SystemSummary{
				{System: "orchestrator", Unit: "runs", Count: reports.Figure{Metric: "runs", Value: p(364), Change: &reports.Change{Previous: p(300), Delta: p(64), Significant: true}},
					FailureRate: reports.Figure{Metric: "run_failure_rate", Value: p(0.08), Numerator: p(29), Denominator: p(364), Change: noise},
					RetryRate:   reports.Figure{Metric: "provider_retry_rate", Value: p(0.25), Numerator: p(50), Denominator: p(200), Change: rise},
					Daily:       daily(50, 51, 52, 0, 70, 71, 70)},
				{System: "factory", Unit: "runs", Count: reports.Figure{Metric: "record_runs", Value: p(12)},
					FailureRate: reports.Figure{Metric: "record_failure_rate", Value: p(5.0 / 12), Change: &reports.Change{Reason: "too few runs before"}},
					RetryRate:   reports.Figure{Metric: "record_retry_rate", Value: p(5.0 / 12)},
					Daily:       daily(0, 0, 6, 0, 0, 6, 0)},
				{System: "claude-code", Unit: "calls", Count: reports.Figure{Metric: "calls", Value: p(30)},
					FailureRate: reports.Figure{Metric: "call_failure_rate", Value: p(0.1), Change: noise},
					RetryRate:   reports.Figure{Metric: "call_retry_rate", Value: p(1.0 / 3)},
					Cost:        reports.Figure{Metric: "call_cost_usd", Value: p(4.21), Change: &reports.Change{Previous: p(3), Delta: p(1.21), Significant: true}},
					Daily:       daily(4, 4, 4, 0, 0, 9, 9)},
			},
			Where: []reports.WhereRow{
				{What: "retries", Kind: "model", Key: "bedrock/au.anthropic.claude-sonnet-4-5-20250929-v1:0", System: "orchestrator", Unit: "retried requests", Value: 30, Total: 50, Share: 0.6},
				{What: "cost_usd", Kind: "session", Key: "019c8a59-e9dd-71f0-9ae3-4079fe9726a9", System: "claude-code", Unit: "USD", Value: 3.5, Total: 4.21, Share: 3.5 / 4.21},
			},
		},
	}
}

// TestBrowserReportFirstScreenDrawn is TestBrowserReportFirstScreen on a
// page the renderer draws from firstScreenReport: the tiles and the lead
// chart within the first 800 px at 1280, stacked at 400, and the page
// clean as every page must be (no request, nothing cut off in print,
// every chart named and with its data table).
func TestBrowserReportFirstScreenDrawn(t *testing.T) {
	exe := needChromium(t)
	page := filepath.Join(t.TempDir(), "drawn.html")
	var buf bytes.Buffer
	if err := render.RenderReport(&buf, firstScreenReport(), render.FormatHTML, render.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	browser := startBrowser(t, exe)
	shots := screenshotDir(t)
	checkPageFirstScreen(t, browser, shots, "drawn", page)
	res, err := inspectPage(t, browser, page, shots, "drawn")
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res)
}
