package notify

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/retry/runner/guard"
)

// Sender delivers notifications. Its zero value is not usable; see
// NewSender. Clock, randomness, sleeping and the environment are fields so
// tests can fix them.
type Sender struct {
	Client *http.Client
	Env    func(string) (string, bool)
	Now    func() time.Time
	Rand   retry.Rand
	Sleep  func(context.Context, time.Duration) error

	// Attempts is how many times one check tries a notification, and
	// Backoff the waits between tries. Retry-After from a receiver is
	// honoured up to MaxWait; a longer wait leaves the notification for the
	// next check.
	Attempts int
	Backoff  retry.Backoff
	MaxWait  time.Duration

	UserAgent string
}

// NewSender returns a Sender using the real clock, environment and network.
func NewSender(userAgent string) *Sender {
	return &Sender{
		// Each attempt has its receiver's timeout through its context.
		Client:    &http.Client{},
		Env:       os.LookupEnv,
		Now:       time.Now,
		Rand:      rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0)),
		Sleep:     retry.Sleep,
		Attempts:  3,
		Backoff:   retry.Orchestrator,
		MaxWait:   10 * time.Second,
		UserAgent: userAgent,
	}
}

// Error is a failed delivery. Its text never holds a secret: URLs lose
// their credentials and query, and every value taken from the environment
// or a header is masked.
type Error struct {
	Receiver string
	Msg      string
	// Retry says whether trying again might succeed (a timeout, a refused
	// connection, 429 or 5xx) rather than failing the same way (400).
	Retry      bool
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("receiver %q: %s", e.Receiver, e.Msg) }

// Deliver sends m to r, trying up to Attempts times with backoff between
// tries, and returns how many attempts it made.
func (s *Sender) Deliver(ctx context.Context, r *alerting.Receiver, m Message) (int, error) {
	var err error
	for n := 1; ; n++ {
		err = s.send(ctx, r, m)
		var de *Error
		if err == nil || !errors.As(err, &de) || !de.Retry || n >= s.Attempts {
			return n, err
		}
		wait := max(s.Backoff.Delay(n, s.Rand), de.RetryAfter)
		if wait > s.MaxWait {
			de.Msg += fmt.Sprintf(" (the receiver asked to wait %v; left for the next check)", de.RetryAfter.Round(time.Second))
			return n, err
		}
		if s.Sleep(ctx, wait) != nil {
			return n, err
		}
	}
}

func (s *Sender) send(ctx context.Context, r *alerting.Receiver, m Message) error {
	switch r.Kind {
	case alerting.KindWebhook:
		body, err := json.Marshal(m)
		if err != nil {
			return &Error{Receiver: r.Name, Msg: err.Error()}
		}
		return s.post(ctx, r, r.URL, body)
	case alerting.KindAlertmanager:
		body, err := json.Marshal(postable(m, s.Now().Add(r.AlertTTL)))
		if err != nil {
			return &Error{Receiver: r.Name, Msg: err.Error()}
		}
		return s.post(ctx, r, strings.TrimRight(r.URL, "/")+"/api/v2/alerts", body)
	case alerting.KindCommand:
		body, err := json.Marshal(m)
		if err != nil {
			return &Error{Receiver: r.Name, Msg: err.Error()}
		}
		return s.run(ctx, r, body)
	}
	return &Error{Receiver: r.Name, Msg: fmt.Sprintf("unknown receiver kind %q", r.Kind)}
}

// amAlert is an alert as Alertmanager's POST /api/v2/alerts takes it.
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// postable gives m's alerts as Alertmanager takes them. A firing alert
// ends at until unless a later check refreshes it, as Prometheus does, so
// an alert whose checks stop resolves rather than firing forever.
func postable(m Message, until time.Time) []amAlert {
	out := make([]amAlert, len(m.Alerts))
	for i, a := range m.Alerts {
		end := a.EndsAt
		if a.Status == "firing" {
			end = until
		}
		out[i] = amAlert{Labels: a.Labels, Annotations: a.Annotations, StartsAt: a.StartsAt, EndsAt: end, GeneratorURL: a.GeneratorURL}
	}
	return out
}

// secrets expands r's environment references and lists every value that
// must not appear in output: expanded variables, URL passwords and query
// values, and header values.
type expanded struct {
	url     string
	headers map[string]string
	argv    []string
	secrets []string
}

func (s *Sender) expand(r *alerting.Receiver, rawURL string) (*expanded, error) {
	x := &expanded{headers: map[string]string{}}
	var err error
	add := func(v string) (string, error) {
		out, used, err := alerting.ExpandEnv(v, s.Env)
		x.secrets = append(x.secrets, used...)
		return out, err
	}
	if rawURL != "" {
		if x.url, err = add(rawURL); err != nil {
			return nil, err
		}
		if u, err := url.Parse(x.url); err == nil {
			if p, ok := u.User.Password(); ok {
				// Go's client sends user info as a Basic Authorization
				// header, which a server may echo back.
				x.secrets = append(x.secrets, p, u.User.String(),
					base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+p)))
			}
			for _, vs := range u.Query() {
				x.secrets = append(x.secrets, vs...)
			}
			// Slack's and Discord's webhooks carry their token in the
			// path (/services/T…/B…/token, /api/webhooks/id/token).
			x.secrets = append(x.secrets, secretSegments(u.Path)...)
		}
	}
	for k, v := range r.Headers {
		if x.headers[k], err = add(v); err != nil {
			return nil, err
		}
		x.secrets = append(x.secrets, x.headers[k])
		// "Bearer <token>": a server may echo the token alone.
		for _, f := range strings.Fields(x.headers[k]) {
			if !authSchemes[strings.ToLower(f)] {
				x.secrets = append(x.secrets, f)
			}
		}
	}
	for i, a := range r.Argv {
		v, err := add(a)
		if err != nil {
			return nil, err
		}
		x.argv = append(x.argv, v)
		// A program may print its arguments, tokens among them; only its
		// name is shown.
		if i > 0 {
			x.secrets = append(x.secrets, v)
		}
	}
	x.secrets = withEncodings(x.secrets)
	return x, nil
}

// authSchemes are the words before a credential in an Authorization
// header; they are not secret, and masking them would garble messages.
var authSchemes = map[string]bool{"bearer": true, "basic": true, "token": true, "digest": true, "apikey": true}

// withEncodings adds the forms a secret takes when a receiver echoes it:
// URL-escaped (as a query value or a path), JSON-escaped (with and
// without HTML escaping, and with an escaped slash), and Go-quoted.
func withEncodings(secrets []string) []string {
	out := slices.Clone(secrets)
	for _, v := range secrets {
		out = append(out, url.QueryEscape(v), url.PathEscape(v))
		if b, err := json.Marshal(v); err == nil {
			j := string(b[1 : len(b)-1])
			out = append(out, j, strings.ReplaceAll(j, "/", `\/`))
		}
		var sb strings.Builder
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) == nil {
			j := strings.TrimSuffix(sb.String(), "\n")
			out = append(out, j[1:len(j)-1])
		}
		q := strconv.Quote(v)
		out = append(out, q[1:len(q)-1])
		// A receiver may echo a token encoded or re-cased.
		out = append(out, html.EscapeString(v), strings.ToUpper(v), strings.ToLower(v),
			hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v))))
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString([]byte(v)))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// redact masks every secret in msg, longest first so that one secret
// containing another is masked whole.
func redact(msg string, secrets []string) string {
	ss := slices.Clone(secrets)
	slices.SortFunc(ss, func(a, b string) int { return len(b) - len(a) })
	for _, v := range ss {
		if len(v) >= 3 { // masking "a" or "12" would garble the text, not hide anything
			msg = strings.ReplaceAll(msg, v, "<redacted>")
		}
	}
	return msg
}

// redactCut is redact for text that may have been cut short: a tail that
// begins a secret is masked too.
func redactCut(msg string, secrets []string) string {
	msg = redact(msg, secrets)
	for _, v := range secrets {
		for n := min(len(v)-1, len(msg)); n >= 3; n-- {
			if strings.HasSuffix(msg, v[:n]) {
				return msg[:len(msg)-n] + "<redacted>"
			}
		}
	}
	return msg
}

// safeURL is u without credentials, query or fragment, and with the
// path segments that may be tokens masked.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	segs := strings.Split(u.Path, "/")
	for i, seg := range segs {
		if tokenLike(seg) {
			segs[i] = "<redacted>"
		}
	}
	u.Path, u.RawPath = strings.Join(segs, "/"), ""
	return u.String()
}

// secretSegments are the segments of a URL path that may be tokens.
func secretSegments(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if tokenLike(seg) {
			out = append(out, seg)
		}
	}
	return out
}

// tokenLike reports whether a URL path segment may be a secret: long, or
// of letters and digits mixed (Slack's T0123ABCD), rather than a word
// such as "api", "v2", "alerts" or "services".
func tokenLike(seg string) bool {
	if len(seg) >= 24 {
		return true
	}
	var letters, digits bool
	for _, r := range seg {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letters = true
		}
	}
	return len(seg) >= 8 && letters && digits
}

func (s *Sender) post(ctx context.Context, r *alerting.Receiver, rawURL string, body []byte) error {
	fail := func(retry bool, format string, args ...any) *Error {
		return &Error{Receiver: r.Name, Retry: retry, Msg: fmt.Sprintf(format, args...)}
	}
	x, err := s.expand(r, rawURL)
	if err != nil {
		return fail(false, "%v", err)
	}
	if u, err := url.Parse(x.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Only a URL taken whole from the environment gets here unchecked.
		return fail(false, "url %s does not expand to an http:// or https:// URL", r.URL)
	}
	where := safeURL(x.url)
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.url, bytes.NewReader(body))
	if err != nil {
		return fail(false, "POST %s: %s", redact(where, x.secrets), redact(err.Error(), x.secrets))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.UserAgent)
	for k, v := range x.headers {
		req.Header.Set(k, v)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the whole URL
		}
		msg := err.Error()
		if ctx.Err() == context.DeadlineExceeded {
			msg = fmt.Sprintf("timed out after %v", r.Timeout)
		}
		return fail(true, "POST %s: %s", redact(where, x.secrets), redact(msg, x.secrets))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // so the connection can be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	e := fail(resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500,
		"POST %s: %s: %s", redact(where, x.secrets), redact(resp.Status, x.secrets), oneLine(redactCut(string(snippet), x.secrets)))
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	return e
}

func (s *Sender) run(ctx context.Context, r *alerting.Receiver, body []byte) error {
	x, err := s.expand(r, "")
	if err != nil {
		return &Error{Receiver: r.Name, Msg: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, x.argv[0], x.argv[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "ORCHSTAT_RECEIVER="+r.Name)
	// A program that leaves a child holding stderr must not hang the check.
	cmd.WaitDelay = time.Second
	// The program runs in a process group of its own, under a guard that
	// takes the group down should orchstat die (kill -9 of check left sh
	// and its sleep behind); a timeout ends the whole group.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	g, err := guard.Start(cmd)
	if err == nil {
		if err = g.Wait(); err != nil {
			if _, sig, signaled := g.ExitStatus(); signaled {
				err = fmt.Errorf("killed by %v", sig)
			}
		}
	}
	if err == nil {
		return nil
	}
	msg := err.Error()
	if ctx.Err() == context.DeadlineExceeded {
		msg = fmt.Sprintf("killed after its timeout of %v", r.Timeout)
	}
	if out := oneLine(redactCut(stderr.String(), x.secrets)); out != "" {
		msg += ": " + out
	}
	// The program's name is shown, its arguments (which may hold tokens) not.
	return &Error{Receiver: r.Name, Retry: true, Msg: redact(fmt.Sprintf("command %s: %s", r.Argv[0], msg), x.secrets)}
}

// limitedBuffer keeps the first 2 KiB written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := 2048 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// oneLine squeezes a response or stderr into one short line for an error.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
