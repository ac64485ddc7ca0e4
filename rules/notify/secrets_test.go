package notify

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/alerting"
)

// forms are the ways a secret can come back in a receiver's answer.
func forms(secret string) map[string]string {
	j, _ := json.Marshal(secret)
	q := strconv.Quote(secret)
	return map[string]string{
		"raw":          secret,
		"query-escape": url.QueryEscape(secret),
		"path-escape":  url.PathEscape(secret),
		"json":         string(j[1 : len(j)-1]),
		"go-quoted":    q[1 : len(q)-1],
		"base64":       base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64url":    base64.RawURLEncoding.EncodeToString([]byte(secret)),
		"hex":          hex.EncodeToString([]byte(secret)),
		"upper":        strings.ToUpper(secret),
		"html":         html.EscapeString(secret),
	}
}

func assertNoSecret(t *testing.T, msg string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for name, f := range forms(s) {
			if len(f) >= 3 && strings.Contains(msg, f) {
				t.Errorf("the %s form of a secret (%q) is in the message:\n%s", name, f, msg)
			}
		}
	}
}

// echoServer is a real HTTP server on loopback that fails every request
// with status 401 and a reason phrase quoting the request line and the
// Authorization header, then echoes every request header in a JSON body:
// what a careless receiver does.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				hs := map[string]string{}
				for k, v := range req.Header {
					hs[k] = strings.Join(v, ",")
				}
				// The token alone, re-encoded, as a receiver's debug page
				// might show it.
				tok := req.Header.Get("Authorization")
				if _, after, ok := strings.Cut(tok, " "); ok {
					tok = after
				}
				enc := []string{base64.StdEncoding.EncodeToString([]byte(tok)), base64.RawURLEncoding.EncodeToString([]byte(tok)),
					hex.EncodeToString([]byte(tok)), strings.ToUpper(tok), html.EscapeString(tok)}
				body, _ := json.Marshal(map[string]any{"error": "bad credentials", "headers": hs, "uri": req.RequestURI, "token": enc})
				fmt.Fprintf(c, "HTTP/1.1 401 bad credentials in %s auth=%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
					req.RequestURI, req.Header.Get("Authorization"), len(body), body)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestSecretsInEchoedRequests: every form a secret takes when a receiver
// quotes the request back (in its status line, as JSON, URL-escaped, or as
// the Basic header Go builds from user info) is masked in the error that
// orchstat prints and stores as notifications.last_error.
func TestSecretsInEchoedRequests(t *testing.T) {
	t.Parallel()
	base := echoServer(t)
	env := map[string]string{
		"TOKEN": "tok/en+Zx9=",
		"PW":    "pa55-w0rd_x~",
		"HDR":   `quo"te\back<slash>&amp`,
	}
	s, _ := testSender(env)
	for _, tc := range []struct {
		name    string
		r       *alerting.Receiver
		secrets []string
	}{
		{"query and bearer in the status line", &alerting.Receiver{Name: "q", Kind: alerting.KindWebhook,
			URL:     base + "/hook?token=${TOKEN}",
			Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}, []string{env["TOKEN"]}},
		{"user info sent as Basic auth", &alerting.Receiver{Name: "u", Kind: alerting.KindWebhook,
			URL: strings.Replace(base, "http://", "http://alice:${PW}@", 1) + "/hook"},
			[]string{env["PW"], base64.StdEncoding.EncodeToString([]byte("alice:" + env["PW"]))}},
		{"header with quote and backslash echoed as JSON", &alerting.Receiver{Name: "h", Kind: alerting.KindWebhook,
			URL: base + "/hook", Headers: map[string]string{"X-Api-Key": "${HDR}"}}, []string{env["HDR"]}},
		{"literal header value", &alerting.Receiver{Name: "l", Kind: alerting.KindWebhook,
			URL: base + "/hook", Headers: map[string]string{"Authorization": "Bearer literal-token-42"}}, []string{"literal-token-42"}},
		{"token re-encoded", &alerting.Receiver{Name: "e", Kind: alerting.KindWebhook,
			URL: base + "/hook", Headers: map[string]string{"Authorization": `Bearer quo"te'tok&42`}}, []string{`quo"te'tok&42`}},
		{"Slack-style token in the path", &alerting.Receiver{Name: "s", Kind: alerting.KindWebhook,
			URL: base + "/services/T0123ABCD/B0456EFGH/abcdEFGHijklMNOPqrstUVWX"},
			[]string{"T0123ABCD", "B0456EFGH", "abcdEFGHijklMNOPqrstUVWX"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.Timeout = 5 * time.Second
			_, err := s.Deliver(context.Background(), tc.r, testMessage())
			if err == nil {
				t.Fatal("the receiver refused every request, but delivery succeeded")
			}
			if !strings.Contains(err.Error(), "401") {
				t.Fatalf("not the receiver's answer: %v", err)
			}
			assertNoSecret(t, err.Error(), tc.secrets...)
		})
	}
}

// TestCommandArgumentsNeverShown: a command receiver's arguments, literal
// or from the environment, are masked when the program prints them.
func TestCommandArgumentsNeverShown(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "notify.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho \"usage error: $0 $*\" >&2\nprintf '%s\\n' \"$@\" | sed 's/^/arg: /' >&2\nexit 3\n"), 0o755)
	s, _ := testSender(map[string]string{"SECRET": "env-secret-77"})
	r := &alerting.Receiver{Name: "cmd", Kind: alerting.KindCommand, Timeout: 5 * time.Second,
		Argv: []string{script, "--token", "literal-secret-99", "--other=${SECRET}"}}
	_, err := s.Deliver(context.Background(), r, testMessage())
	if err == nil || !strings.Contains(err.Error(), "usage error") {
		t.Fatalf("want the program's stderr in the error, got %v", err)
	}
	assertNoSecret(t, err.Error(), "literal-secret-99", "env-secret-77", "--other=env-secret-77")
}
