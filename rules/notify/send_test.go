package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/alerting"
)

// testSender never sleeps for real; it records the waits it was asked for.
func testSender(env map[string]string) (*Sender, *[]time.Duration) {
	s := NewSender("orchstat/test")
	s.Now = func() time.Time { return t0 }
	s.Env = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	s.Rand = fixedRand(0.5)
	var waits []time.Duration
	s.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	return s, &waits
}

type fixedRand float64

func (f fixedRand) Float64() float64 { return float64(f) }

// server answers with the given statuses in turn (the last one repeats) and
// records what it received.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	header   http.Header
	bodies   [][]byte
	paths    []string
	reply    string
}

func newServer(t *testing.T, statuses ...int) *server {
	s := &server{statuses: statuses}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		b, _ := io.ReadAll(r.Body)
		s.bodies = append(s.bodies, b)
		s.paths = append(s.paths, r.URL.RequestURI())
		s.header = r.Header.Clone()
		st := s.statuses[min(len(s.bodies)-1, len(s.statuses)-1)]
		if st == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "60")
		}
		w.WriteHeader(st)
		io.WriteString(w, s.reply)
	}))
	t.Cleanup(s.Close)
	return s
}

func testMessage() Message {
	r := rule("a", "critical")
	q, _ := Plan(&alerting.Route{Receiver: "x", GroupBy: []string{"alertname"}},
		[]*alerting.Receiver{{Name: "x", Kind: alerting.KindWebhook, SendResolved: true}},
		[]Evaluated{firing(r, true, map[string]string{}), resolved(rule("a", "critical"), map[string]string{"provider": "p"})}, map[string]time.Time{}, t0)
	return q[0].Message
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	srv := newServer(t, 200)
	s, _ := testSender(map[string]string{"TOKEN": "tok-123"})
	r := &alerting.Receiver{Name: "hook", Kind: alerting.KindWebhook, URL: srv.URL + "/hook?key=${TOKEN}", Timeout: time.Second,
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}
	n, err := s.Deliver(context.Background(), r, testMessage())
	if err != nil || n != 1 {
		t.Fatalf("attempts %d, %v", n, err)
	}
	if srv.paths[0] != "/hook?key=tok-123" || srv.header.Get("Authorization") != "Bearer tok-123" ||
		srv.header.Get("Content-Type") != "application/json" || srv.header.Get("User-Agent") != "orchstat/test" {
		t.Errorf("request: %s %v", srv.paths[0], srv.header)
	}
	var got map[string]any
	if err := json.Unmarshal(srv.bodies[0], &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "groupKey", "truncatedAlerts", "status", "receiver", "groupLabels", "commonLabels", "commonAnnotations", "externalURL", "alerts"} {
		if _, ok := got[k]; !ok {
			t.Errorf("payload lacks %s", k)
		}
	}
	alert := got["alerts"].([]any)[0].(map[string]any)
	for _, k := range []string{"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"} {
		if _, ok := alert[k]; !ok {
			t.Errorf("alert lacks %s", k)
		}
	}
	if got["version"] != "4" || alert["endsAt"] != "0001-01-01T00:00:00Z" {
		t.Errorf("version %v, firing endsAt %v", got["version"], alert["endsAt"])
	}
}

func TestAlertmanagerPayload(t *testing.T) {
	t.Parallel()
	srv := newServer(t, 200)
	s, _ := testSender(nil)
	r := &alerting.Receiver{Name: "am", Kind: alerting.KindAlertmanager, URL: srv.URL + "/", Timeout: time.Second, AlertTTL: time.Hour}
	if _, err := s.Deliver(context.Background(), r, testMessage()); err != nil {
		t.Fatal(err)
	}
	if srv.paths[0] != "/api/v2/alerts" {
		t.Errorf("path %s", srv.paths[0])
	}
	var got []struct {
		Labels           map[string]string
		StartsAt, EndsAt time.Time
	}
	if err := json.Unmarshal(srv.bodies[0], &got); err != nil || len(got) != 2 {
		t.Fatalf("%v: %s", err, srv.bodies[0])
	}
	// Firing alerts end an alert_ttl after the push unless refreshed;
	// resolved ones end when they resolved.
	if !got[0].EndsAt.Equal(t0.Add(time.Hour)) || !got[1].EndsAt.Equal(t0.Add(time.Hour)) || got[1].Labels["provider"] != "p" {
		t.Errorf("got %+v", got)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		statuses []int
		attempts int
		waits    string
		err      string
	}{
		{"503 then ok", []int{503, 200}, 2, "[1s]", ""},
		{"5xx until out of attempts", []int{500}, 3, "[1s 2s]", "500 Internal Server Error"},
		{"400 is not retried", []int{400}, 1, "[]", "400 Bad Request"},
		{"429 asking for 60s is left for the next check", []int{429}, 1, "[]", "asked to wait 1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.statuses...)
			s, waits := testSender(nil)
			r := &alerting.Receiver{Name: "hook", Kind: alerting.KindWebhook, URL: srv.URL, Timeout: time.Second}
			n, err := s.Deliver(context.Background(), r, testMessage())
			if n != tt.attempts || len(srv.bodies) != tt.attempts {
				t.Errorf("attempts %d, requests %d, want %d", n, len(srv.bodies), tt.attempts)
			}
			if got := fmtDurations(*waits); got != tt.waits {
				t.Errorf("waits %s, want %s", got, tt.waits)
			}
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("err %v, want %q", err, tt.err)
			}
		})
	}
}

func fmtDurations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	s, _ := testSender(nil)
	s.Attempts = 1
	r := &alerting.Receiver{Name: "slow", Kind: alerting.KindWebhook, URL: srv.URL, Timeout: 50 * time.Millisecond}
	_, err := s.Deliver(context.Background(), r, testMessage())
	var de *Error
	if !errors.As(err, &de) || !de.Retry || !strings.Contains(err.Error(), "timed out after 50ms") {
		t.Fatalf("got %v", err)
	}
}

// No secret reaches an error: not from the URL's credentials or query, a
// header, the environment, or a server that echoes them back.
func TestSecretsNeverInErrors(t *testing.T) {
	t.Parallel()
	srv := newServer(t, 401)
	srv.reply = "echo: hunter2-token and Bearer hdr-secret-9 then pw-secret-7"
	env := map[string]string{"TOKEN": "hunter2-token"}
	secrets := []string{"hunter2-token", "hdr-secret-9", "pw-secret-7", "hunter2", "hdr-sec"}
	url := strings.Replace(srv.URL, "http://", "http://user:pw-secret-7@", 1) + "/hook?token=${TOKEN}"
	s, _ := testSender(env)
	for _, r := range []*alerting.Receiver{
		{Name: "hook", Kind: alerting.KindWebhook, URL: url, Timeout: time.Second, Headers: map[string]string{"X-Key": "Bearer hdr-secret-9"}},
		{Name: "down", Kind: alerting.KindWebhook, URL: "http://user:pw-secret-7@127.0.0.1:1/x?token=${TOKEN}", Timeout: time.Second},
		{Name: "cmd", Kind: alerting.KindCommand, Argv: []string{"sh", "-c", `echo "failed with $1 and $ORCHSTAT_RECEIVER" >&2; exit 3`, "sh", "${TOKEN}"}, Timeout: 5 * time.Second},
	} {
		_, err := s.Deliver(context.Background(), r, testMessage())
		if err == nil {
			t.Fatalf("%s: delivered", r.Name)
		}
		for _, sec := range secrets {
			if strings.Contains(err.Error(), sec) {
				t.Errorf("%s: error shows %q: %v", r.Name, sec, err)
			}
		}
		if !strings.Contains(err.Error(), "<redacted>") && r.Name != "down" {
			t.Errorf("%s: nothing redacted in %v", r.Name, err)
		}
		t.Log(err)
	}
	// A body cut short inside a secret still hides its start.
	if got := redactCut("xx: hunter2-to", secrets[:1]); got != "xx: <redacted>" {
		t.Errorf("cut secret: %q", got)
	}
	if _, err := s.Deliver(context.Background(), &alerting.Receiver{Name: "unset", Kind: alerting.KindWebhook, URL: srv.URL + "/${NOPE}", Timeout: time.Second}, testMessage()); err == nil ||
		!strings.Contains(err.Error(), "environment variable NOPE is not set") {
		t.Errorf("unset variable: %v", err)
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "got.json")
	s, _ := testSender(map[string]string{"OUT": out})
	r := &alerting.Receiver{Name: "script", Kind: alerting.KindCommand, Argv: []string{"sh", "-c", `cat > "$1"`, "sh", "${OUT}"}, Timeout: 5 * time.Second}
	if _, err := s.Deliver(context.Background(), r, testMessage()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var m Message
	if err := json.Unmarshal(b, &m); err != nil || m.Version != "4" || len(m.Alerts) != 2 {
		t.Fatalf("stdin was %s (%v)", b, err)
	}

	s.Attempts = 1
	slow := &alerting.Receiver{Name: "slow", Kind: alerting.KindCommand, Argv: []string{"sleep", "10"}, Timeout: 100 * time.Millisecond}
	start := time.Now()
	_, err = s.Deliver(context.Background(), slow, testMessage())
	if err == nil || !strings.Contains(err.Error(), "killed after its timeout of 100ms") {
		t.Fatalf("got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the timeout did not stop the command")
	}
}

// Flush keeps each receiver's order: after a failure its later
// notifications are held back, while other receivers go on.
func TestFlushOrder(t *testing.T) {
	t.Parallel()
	bad, good := newServer(t, 500), newServer(t, 200)
	s, _ := testSender(nil)
	s.Attempts = 1
	recvs := []*alerting.Receiver{
		{Name: "bad", Kind: alerting.KindWebhook, URL: bad.URL, Timeout: time.Second},
		{Name: "good", Kind: alerting.KindWebhook, URL: good.URL, Timeout: time.Second},
	}
	m := testMessage()
	res := s.Flush(context.Background(), recvs, []Item{
		{ID: 1, Receiver: "bad", Message: m}, {ID: 2, Receiver: "good", Message: m},
		{ID: 3, Receiver: "bad", Message: m}, {ID: 4, Receiver: "gone", Message: m}, {ID: 5, Receiver: "good", Message: m},
	}, nil)
	var got []string
	for _, r := range res {
		st := "ok"
		if r.Err != nil {
			st = r.Err.Error()
		}
		got = append(got, st)
	}
	want := []string{`500 Internal Server Error`, "ok", "held back", "no such receiver", "ok"}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("item %d: %q, want %q", i+1, got[i], want[i])
		}
	}
	if len(bad.bodies) != 1 || len(good.bodies) != 2 {
		t.Errorf("requests: bad %d, good %d", len(bad.bodies), len(good.bodies))
	}
}

// A URL may come whole from the environment; it is checked when sent and
// never shown.
func TestURLFromEnvironment(t *testing.T) {
	t.Parallel()
	srv := newServer(t, 200)
	if _, err := alerting.Parse("r.yaml", []byte("receivers:\n  - name: hook\n    webhook: {url: \"${HOOK_URL}\"}\n")); err != nil {
		t.Fatal(err)
	}
	r := &alerting.Receiver{Name: "hook", Kind: alerting.KindWebhook, URL: "${HOOK_URL}", Timeout: time.Second}
	s, _ := testSender(map[string]string{"HOOK_URL": srv.URL + "/path?t=abc"})
	if _, err := s.Deliver(context.Background(), r, testMessage()); err != nil || srv.paths[0] != "/path?t=abc" {
		t.Fatalf("%v %v", err, srv.paths)
	}
	s, _ = testSender(map[string]string{"HOOK_URL": "ftp://secret-host/x"})
	_, err := s.Deliver(context.Background(), r, testMessage())
	if err == nil || strings.Contains(err.Error(), "secret-host") || !strings.Contains(err.Error(), "does not expand to an http") {
		t.Fatalf("got %v", err)
	}
}
