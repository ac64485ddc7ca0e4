package claudecode

import (
	"encoding/json"
	"strconv"
)

// retry is a system api_error line: Claude Code's record that an attempt
// failed and will be retried after retryInMs.
type retry struct {
	attempt    int      // retryAttempt: the 1-based attempt that failed
	maxRetries *int     // the retry budget
	backoffMS  *float64 // retryInMs: the wait before the next attempt
	status     *int     // HTTP status; none for network errors
	msg        string
	kind       string // the error's type or network code
}

// rawAPIError holds the fields of the error shapes versions write: the
// Anthropic SDK's serialised APIError {status, requestID, error:{type,
// error:{type, message}}}; the newer {message, status, requestId, ...};
// and network failures {cause:{code, ...}}.
type rawAPIError struct {
	Status  json.RawMessage `json:"status"`
	Message json.RawMessage `json:"message"`
	Error   json.RawMessage `json:"error"`
	Cause   json.RawMessage `json:"cause"`
	Type    json.RawMessage `json:"type"`
	Code    json.RawMessage `json:"code"`
}

func readRetry(r *rawLine) (*retry, *fieldError) {
	n, err := count(r.RetryAttempt, "retryAttempt")
	if err != nil {
		return nil, err
	}
	if n == nil || *n < 1 {
		return nil, &fieldError{"retryAttempt", "no retry attempt (want a number from 1)"}
	}
	rt := &retry{attempt: *n}
	if rt.maxRetries, err = count(r.MaxRetries, "maxRetries"); err != nil {
		return nil, err
	}
	if rt.backoffMS, err = number(r.RetryInMs, "retryInMs"); err != nil {
		return nil, err
	}
	if err := rt.readError(r.Error); err != nil {
		return nil, err
	}
	if rt.kind == "" {
		rt.kind = causeCode(r.Cause)
	}
	if rt.msg == "" {
		rt.msg = lenientString(r.Content)
	}
	if rt.msg == "" {
		rt.msg = rt.kind
	}
	return rt, nil
}

// readError reads the error object, or a bare error string.
func (rt *retry) readError(raw json.RawMessage) *fieldError {
	if absent(raw) {
		return nil
	}
	if s := lenientString(raw); s != "" {
		rt.msg = s
		return nil
	}
	var e rawAPIError
	if _, ok := object(raw, &e); !ok {
		return &fieldError{"error", "not an object or a string"}
	}
	rt.status = lenientStatus(e.Status)
	rt.msg = lenientString(e.Message)
	// The SDK's shape nests the API's error body twice: error.error is
	// {type:"error", error:{type:"overloaded_error", message}}.
	var body rawAPIError
	if _, ok := object(e.Error, &body); ok {
		var inner rawAPIError
		if _, ok := object(body.Error, &inner); ok {
			rt.kind = lenientString(inner.Type)
			if rt.msg == "" {
				rt.msg = lenientString(inner.Message)
			}
		}
		if t := lenientString(body.Type); rt.kind == "" && t != "error" {
			rt.kind = t
		}
		if rt.msg == "" {
			rt.msg = lenientString(body.Message)
		}
	}
	if c := causeCode(e.Cause); c != "" {
		rt.kind = c
	}
	if rt.msg == "" && rt.status != nil {
		rt.msg = "HTTP " + strconv.Itoa(*rt.status)
	}
	return nil
}

// causeCode is a network error's code: ECONNRESET, FailedToOpenSocket, ...
func causeCode(raw json.RawMessage) string {
	var c rawAPIError
	if _, ok := object(raw, &c); !ok {
		return ""
	}
	return lenientString(c.Code)
}
