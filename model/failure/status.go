package failure

import "strings"

// StatusCode finds the HTTP status (400–599) a provider error's text
// reports, or 0. Error messages carry no status field (spec/EVENTS.md), so
// this reads the text: a three-digit number counts only as a whole word in
// a status position, so "4000 tokens", "port 5000", "limit 500" or
// "src/a.ts:404:2" are not statuses. The positions are:
//   - the start of the text: "429 Too Many Requests", `529 {"type":...}`,
//     "404 model not found";
//   - after a colon and a space, followed by a capital letter, a brace or
//     bracket, or the end: "Provider request failed: 503 Service Unavailable";
//   - after the words status, status code, HTTP (HTTP/1.1), code or error:
//     "Request failed with status code 502", "Error code: 429 - {...}";
//   - before a reason phrase: "got 502 Bad Gateway", "503 service unavailable".
//
// The first number in such a position wins.
func StatusCode(text string) int {
	for i := 0; i+3 <= len(text); i++ {
		c := text[i]
		if c != '4' && c != '5' {
			continue
		}
		if !isDigit(text[i+1]) || !isDigit(text[i+2]) {
			continue
		}
		if i > 0 && (isWordByte(text[i-1]) || text[i-1] == '.') {
			continue
		}
		end := i + 3
		if end < len(text) && (isWordByte(text[end]) || text[end] == '.' && end+1 < len(text) && isDigit(text[end+1])) {
			continue
		}
		if statusPosition(text[:i], text[end:]) {
			return int(c-'0')*100 + int(text[i+1]-'0')*10 + int(text[i+2]-'0')
		}
	}
	return 0
}

func statusPosition(before, after string) bool {
	rest := strings.TrimLeft(after, " \t")
	// At the start of the text.
	if strings.TrimLeft(before, " \t\r\n\"'([") == "" {
		return true
	}
	// After ": ", followed by a capital, a brace or bracket, or the end.
	if t := strings.TrimRight(before, " \t"); len(t) < len(before) && strings.HasSuffix(t, ":") {
		if rest == "" || rest[0] >= 'A' && rest[0] <= 'Z' || rest[0] == '{' || rest[0] == '[' || rest[0] == '(' {
			return true
		}
	}
	// After a keyword.
	kw := strings.ToLower(strings.TrimRight(before, " \t:=#("))
	for _, k := range statusKeywords {
		if strings.HasSuffix(kw, k) && (len(kw) == len(k) || !isWordByte(kw[len(kw)-len(k)-1])) {
			return true
		}
	}
	// Before a reason phrase.
	lr := strings.ToLower(rest)
	for _, p := range reasonPhrases {
		if strings.HasPrefix(lr, p) {
			return true
		}
	}
	return false
}

var statusKeywords = []string{"status", "status code", "status_code", "statuscode", "http",
	"http/1.0", "http/1.1", "http/2", "http/2.0", "http/3", "code", "error"}

var reasonPhrases = []string{"bad request", "unauthorized", "unauthorised", "payment required",
	"forbidden", "not found", "method not allowed", "request timeout", "conflict", "gone",
	"payload too large", "request entity too large", "unprocessable", "too many requests",
	"internal server error", "not implemented", "bad gateway", "service unavailable",
	"gateway timeout", "overloaded"}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
