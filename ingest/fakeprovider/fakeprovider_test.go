package fakeprovider

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// post sends body to path and reads the whole answer; the error is the
// transport's or the body read's.
func post(ctx context.Context, url, body string) (status int, header http.Header, text string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), err
}

// Each fault, as a plain HTTP client sees it, and the log the server
// keeps: attempts of one call share its body but for stream and
// max_tokens; another body is another call.
func TestScriptedFaults(t *testing.T) {
	s, err := Start(Script{Calls: [][]Fault{
		{RateLimit, ServerError, Overloaded, CutStream, Hang, Stall},
	}, RetryAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs := s.URL + "/v1/messages"
	body := func(stream bool, maxTokens int) string {
		st := "false"
		if stream {
			st = "true"
		}
		return `{"model":"claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"stream":` + st +
			`,"max_tokens":` + strings.Repeat("9", maxTokens) + `}`
	}
	ctx := context.Background()

	code, h, _, err := post(ctx, msgs, body(true, 1))
	if err != nil || code != 429 || h.Get("Retry-After") != "2" {
		t.Errorf("attempt 1: %d, Retry-After %q, %v; want 429, 2", code, h.Get("Retry-After"), err)
	}
	if code, _, text, _ := post(ctx, msgs, body(true, 2)); code != 500 || !strings.Contains(text, `"api_error"`) {
		t.Errorf("attempt 2: %d %s; want 500 with an Anthropic error body", code, text)
	}
	if code, _, text, _ := post(ctx, msgs, body(false, 3)); code != 529 || !strings.Contains(text, "overloaded_error") {
		t.Errorf("attempt 3: %d %s; want 529 overloaded_error", code, text)
	}
	code, _, text, err := post(ctx, msgs, body(true, 1))
	if code != 200 || err == nil || !strings.Contains(text, "message_start") || strings.Contains(text, "message_stop") {
		t.Errorf("attempt 4: %d, %v, %q; want 200 and a stream broken after message_start", code, err, text)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if _, _, _, err := post(short, msgs, body(true, 1)); err == nil {
		t.Error("attempt 5: answered; want no answer until the client gave up")
	}
	cancel()
	short, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
	code, _, text, err = post(short, msgs, body(true, 1))
	if code != 200 || err == nil || !strings.Contains(text, "text_delta") {
		t.Errorf("attempt 6: %d, %v, %q; want 200, the first events, then nothing until the client gave up", code, err, text)
	}
	cancel()
	code, _, text, err = post(ctx, msgs, body(true, 1))
	if code != 200 || err != nil || !strings.Contains(text, "message_stop") {
		t.Errorf("attempt 7: %d, %v; want the whole answer", code, err)
	}
	// Another body is another call, answered at once; so are Responses
	// API calls, streamed to response.completed.
	if code, _, _, err := post(ctx, msgs, `{"model":"claude-haiku-4-5","messages":[{"role":"user","content":"again"}],"stream":true}`); code != 200 || err != nil {
		t.Errorf("second call: %d %v", code, err)
	}
	code, _, text, err = post(ctx, s.URL+"/v1/responses", `{"model":"gpt-5.1-codex","input":[],"stream":true}`)
	if code != 200 || err != nil || !strings.Contains(text, "event: response.completed") {
		t.Errorf("responses call: %d %v %q", code, err, text)
	}
	if code, _, _, _ := post(ctx, s.URL+"/v1/elsewhere", `{}`); code != 404 {
		t.Errorf("another path: %d, want 404", code)
	}

	// The server logs a stall's end when the client has left, which it
	// learns after the client returned: wait for it (a hang's entry reads
	// the same before and after).
	for i := 0; i < 1000 && s.Log()[5].Status != 200; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	calls := s.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3: %+v", len(calls), s.Log())
	}
	var got []string
	for _, r := range calls[0].Requests {
		got = append(got, r.Fault.String()+"/"+strconv.Itoa(r.Status)+"/"+map[bool]string{true: "done", false: "failed"}[r.Done])
	}
	want := "429/429/failed 500/500/failed 529/529/failed cut-stream/200/failed hang/0/failed stall/200/failed answer/200/done"
	if strings.Join(got, " ") != want {
		t.Errorf("call 1:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if calls[0].Failed() != 6 || !calls[0].Succeeded() || len(calls[1].Requests) != 1 || calls[2].Requests[0].API != "openai" {
		t.Errorf("calls: %+v", calls)
	}
	if l := s.Log(); l[len(l)-1].Call != 0 || l[len(l)-1].Status != 404 {
		t.Errorf("the other request: %+v; want no call, 404", l[len(l)-1])
	}
}
