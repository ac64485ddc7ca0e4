package lake

import (
	"context"
	"net/url"
	"regexp"
	"strings"
)

// An S3 error can carry what a hostile or misconfigured endpoint echoed:
// the request's Authorization header (Credential=AKIA…/…, Signature=…), a
// presigned query (X-Amz-Security-Token=…), or the endpoint's own
// user:password when the SDK says the URL is not valid. docs/lake.md
// promises credentials are never printed, so every error the S3 lake
// returns goes through scrub: the secrets it was given are masked in
// every form, and the fields that hold one in a signed request are masked
// whatever they hold.

// signedFields match the parts of a signed request that carry a secret or
// the key that signs it; the value runs to the next separator.
var signedFields = regexp.MustCompile(`(?i)(Credential=|Signature=|X-Amz-Credential=|X-Amz-Signature=|X-Amz-Security-Token=|x-amz-security-token:\s*|AWSAccessKeyId=|aws_access_key_id\s*=\s*|aws_secret_access_key\s*=\s*|aws_session_token\s*=\s*)[^\s,;&"'<>]+`)

// accessKeyIDs match AWS access key ids wherever they appear (AKIA, ASIA
// and the other documented prefixes, then 16 upper-case letters or
// digits).
var accessKeyIDs = regexp.MustCompile(`\b(AKIA|ASIA|AIDA|AROA|AGPA|ANPA|ANVA|AIPA|APKA|ABIA|ACCA)[A-Z0-9]{16}\b`)

// userinfo matches the user:password of a URL.
var userinfo = regexp.MustCompile(`(://)[^/\s@]*@`)

const masked = "[redacted]"

// scrubText masks secrets and anything shaped like one in s.
func scrubText(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, masked)
			s = strings.ReplaceAll(s, url.QueryEscape(v), masked)
			s = strings.ReplaceAll(s, url.PathEscape(v), masked)
		}
	}
	s = signedFields.ReplaceAllString(s, "${1}"+masked)
	s = accessKeyIDs.ReplaceAllString(s, masked)
	return userinfo.ReplaceAllString(s, "${1}"+masked+"@")
}

// scrubbed is an error whose text has been scrubbed; errors.Is and As
// still reach the error it wraps.
type scrubbed struct {
	err  error
	text string
}

func (e *scrubbed) Error() string { return e.text }
func (e *scrubbed) Unwrap() error { return e.err }

func scrub(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	return &scrubbed{err: err, text: scrubText(err.Error(), secrets)}
}

// secretsIn are the credential values of the environment an S3 lake was
// opened with, and the endpoint's user information.
func secretsIn(getenv func(string) string) []string {
	var out []string
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		if v := getenv(k); v != "" {
			out = append(out, v)
		}
	}
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if u, err := url.Parse(getenv(k)); err == nil && u.User != nil {
			out = append(out, u.User.String())
			if p, ok := u.User.Password(); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// scrubbing is an S3 lake whose every error is scrubbed.
type scrubbing struct {
	*s3Lake
	secrets []string
}

func (l scrubbing) List(ctx context.Context, prefix string) ([]Object, error) {
	objs, err := l.s3Lake.List(ctx, prefix)
	return objs, scrub(err, l.secrets)
}

func (l scrubbing) Local(ctx context.Context, objs []Object) ([]string, error) {
	paths, err := l.s3Lake.Local(ctx, objs)
	return paths, scrub(err, l.secrets)
}

func (l scrubbing) Put(ctx context.Context, key, src string) error {
	return scrub(l.s3Lake.Put(ctx, key, src), l.secrets)
}

func (l scrubbing) Create(ctx context.Context, key string, data []byte) ([]byte, error) {
	existing, err := l.s3Lake.Create(ctx, key, data)
	return existing, scrub(err, l.secrets)
}

func (l scrubbing) Staging(ctx context.Context, name string) (string, error) {
	dir, err := l.s3Lake.Staging(ctx, name)
	return dir, scrub(err, l.secrets)
}

// endpointName is an endpoint URL without its user information.
func endpointName(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return scrubText(endpoint, nil)
	}
	u.User = nil
	return u.String()
}
