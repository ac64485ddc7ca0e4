package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// maxPut is S3's limit for one PutObject. Lake files are far smaller by
// design; a larger one would need a multipart upload, which is not built.
const maxPut = 5 << 30

// s3Lake is a lake under a prefix of an S3 (or S3-compatible) bucket.
// Nothing in it holds a credential, so it may be printed.
type s3Lake struct {
	cl       *s3.Client
	bucket   string
	prefix   string // "" or "a/b/": keys are prefix + key
	endpoint string // "" for AWS; names the cache folder
	cacheDir string // this lake's cache folder
}

func openS3(ctx context.Context, location string, o Options) (Lake, error) {
	bucket, prefix, err := parseS3(location)
	if err != nil {
		return nil, err
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	secrets := secretsIn(getenv)
	cl, err := newS3Client(ctx, getenv)
	if err != nil {
		return nil, scrub(fmt.Errorf("lake s3://%s: %w", bucket, err), secrets)
	}
	l := &s3Lake{cl: cl, bucket: bucket, prefix: prefix}
	if ep := cl.Options().BaseEndpoint; ep != nil {
		l.endpoint = *ep
	}
	if l.cacheDir, err = lakeCacheDir(o.CacheDir, l.endpoint, bucket, prefix); err != nil {
		return nil, scrub(fmt.Errorf("lake %s: %w", l.Location(), err), secrets)
	}
	return scrubbing{l, secrets}, nil
}

// Key names the lake with the endpoint it is reached at: one bucket and
// prefix on two S3 servers are two lakes.
func (l *s3Lake) Key() string {
	if l.endpoint == "" {
		return l.Location()
	}
	return l.Location() + " at " + endpointName(l.endpoint)
}

// newS3Client loads the SDK's usual chain: environment, AWS_PROFILE and
// the shared files, SSO, web identity, IMDS. The SDK reads the process
// environment itself, so what getenv says is passed explicitly on top,
// for a caller (a test) whose environment is not the process's.
func newS3Client(ctx context.Context, getenv func(string) string) (*s3.Client, error) {
	opts := []func(*config.LoadOptions) error{
		// S3-compatible servers may not know the CRC checksums the SDK
		// now adds to every request by default.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if r := firstEnv(getenv, "AWS_REGION", "AWS_DEFAULT_REGION"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	if p := getenv("AWS_PROFILE"); p != "" {
		opts = append(opts, config.WithSharedConfigProfile(p))
	}
	if f := getenv("AWS_CONFIG_FILE"); f != "" {
		opts = append(opts, config.WithSharedConfigFiles([]string{f}))
	}
	if f := getenv("AWS_SHARED_CREDENTIALS_FILE"); f != "" {
		opts = append(opts, config.WithSharedCredentialsFiles([]string{f}))
	}
	if id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN"))))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		// The SDK's load errors name files and profiles, not secrets.
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	endpoint := firstEnv(getenv, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	if strings.EqualFold(getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") {
		endpoint = ""
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		// MinIO, gofakes3 and s3rver serve buckets as paths, not as host
		// names; the SDK has set BaseEndpoint by now if the environment
		// or a profile named one.
		o.UsePathStyle = o.BaseEndpoint != nil || getenv("ORCHSTAT_S3_PATH_STYLE") == "1"
	}), nil
}

func firstEnv(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// parseS3 splits "s3://bucket/a/b/" into "bucket" and "a/b/". Empty
// segments are dropped, so doubled or trailing slashes mean nothing.
func parseS3(location string) (bucket, prefix string, err error) {
	rest := strings.TrimPrefix(location, "s3://")
	bucket, rest, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", errors.New("lake s3:// names no bucket: pass s3://bucket or s3://bucket/prefix")
	}
	// The bucket is not echoed: a malformed one may be "key:secret@bucket".
	for _, r := range bucket {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return "", "", errors.New("lake s3://: a bucket name holds only letters, digits, '.', '-' and '_'")
		}
	}
	var segs []string
	for _, s := range strings.Split(rest, "/") {
		switch s {
		case "":
			continue
		case ".", "..":
			return "", "", fmt.Errorf("lake s3://%s: prefix %q has a . or .. segment", bucket, rest)
		}
		segs = append(segs, s)
	}
	if len(segs) > 0 {
		prefix = strings.Join(segs, "/") + "/"
	}
	return bucket, prefix, nil
}

func (l *s3Lake) Location() string {
	if l.prefix == "" {
		return "s3://" + l.bucket
	}
	return "s3://" + l.bucket + "/" + strings.TrimSuffix(l.prefix, "/")
}

// url names an object in errors, without the endpoint or any credential.
func (l *s3Lake) url(key string) string { return "s3://" + l.bucket + "/" + l.prefix + key }

// List lists everything at or below prefix, taken as a path, as dir.List
// does: "events" holds "events/x" but not "events2/x". Keys with a segment
// below prefix starting with "." or "_" are skipped, as Hive skips them.
func (l *s3Lake) List(ctx context.Context, prefix string) ([]Object, error) {
	prefix = strings.Trim(prefix, "/")
	p := s3.NewListObjectsV2Paginator(l.cl, &s3.ListObjectsV2Input{
		Bucket: aws.String(l.bucket),
		Prefix: aws.String(l.prefix + prefix),
	})
	var out []Object
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing lake %s: %w", l.url(prefix), err)
		}
		for _, o := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), l.prefix)
			if !under(key, prefix) {
				continue
			}
			out = append(out, Object{Key: key, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// under reports whether key is prefix or below it, with no hidden segment
// below it ("" is the root, above everything).
func under(key, prefix string) bool {
	rest := key
	if prefix != "" {
		if key != prefix && !strings.HasPrefix(key, prefix+"/") {
			return false
		}
		rest = strings.TrimPrefix(key[len(prefix):], "/")
	}
	if rest == "" {
		return key != "" // the object named by prefix itself
	}
	for _, s := range strings.Split(rest, "/") {
		if s == "" || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "_") {
			return false
		}
	}
	return true
}

// Put uploads src in one PutObject, which S3 makes visible whole or not at
// all, then removes it.
func (l *s3Lake) Put(ctx context.Context, key, src string) error {
	if !localKey(key) {
		return fmt.Errorf("publishing %s: %w", l.url(key), errKey)
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("publishing %s: %w", l.url(key), err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("publishing %s: %w", l.url(key), err)
	}
	if fi.Size() > maxPut {
		return fmt.Errorf("publishing %s: %s is %d bytes, over the 5 GiB a single S3 upload takes", l.url(key), src, fi.Size())
	}
	_, err = l.cl.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(l.bucket),
		Key:           aws.String(l.prefix + key),
		Body:          f,
		ContentLength: aws.Int64(fi.Size()),
	})
	if err != nil {
		return fmt.Errorf("publishing %s: %w", l.url(key), err)
	}
	f.Close()
	if err := os.Remove(src); err != nil {
		return fmt.Errorf("published %s but could not remove %s: %w", l.url(key), src, err)
	}
	return nil
}

// Create puts data with If-None-Match: *, which S3 refuses (412) when the
// key exists, so two runners cannot both create it. Some S3-compatible
// servers (s3rver) ignore the condition and overwrite, so the object is
// read first: that narrows the race there to two creators both reading
// before either writes, when the last write wins and both think they
// created. AWS S3 documents the condition, and gofakes3 keeps it (tested).
func (l *s3Lake) Create(ctx context.Context, key string, data []byte) ([]byte, error) {
	if !localKey(key) {
		return nil, fmt.Errorf("creating %s: %w", l.url(key), errKey)
	}
	if got, ok, err := l.get(ctx, key); err != nil || ok {
		return got, err
	}
	for try := 0; ; try++ {
		_, err := l.cl.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(l.bucket),
			Key:           aws.String(l.prefix + key),
			Body:          bytes.NewReader(data),
			ContentLength: aws.Int64(int64(len(data))),
			IfNoneMatch:   aws.String("*"),
		})
		switch {
		case err == nil:
			return nil, nil
		case isCode(err, "ConditionalRequestConflict") && try == 0:
			continue // a concurrent write to key: S3 asks for a retry
		case isCode(err, "PreconditionFailed"):
			got, ok, err := l.get(ctx, key)
			if err == nil && !ok {
				err = fmt.Errorf("creating %s: S3 said it exists, then that it does not", l.url(key))
			}
			return got, err
		}
		return nil, fmt.Errorf("creating %s: %w", l.url(key), err)
	}
}

// get reads a whole object; ok is false when there is none.
func (l *s3Lake) get(ctx context.Context, key string) (data []byte, ok bool, err error) {
	out, err := l.cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(l.bucket), Key: aws.String(l.prefix + key)})
	if err != nil {
		if isCode(err, "NoSuchKey", "NotFound") {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("reading %s: %w", l.url(key), err)
	}
	defer out.Body.Close()
	data, err = io.ReadAll(out.Body)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", l.url(key), err)
	}
	return data, true, nil
}

// Staging is local: files reach S3 by PUT, not by rename, so they are
// written beside the cache.
func (l *s3Lake) Staging(ctx context.Context, name string) (string, error) {
	if !localKey(name) {
		return "", fmt.Errorf("staging folder %q: %w", name, errKey)
	}
	p := filepath.Join(l.cacheDir, "staging", filepath.FromSlash(name))
	if err := os.RemoveAll(p); err != nil {
		return "", fmt.Errorf("clearing staging folder %s: %w", p, err)
	}
	if err := os.MkdirAll(p, 0o700); err != nil {
		return "", fmt.Errorf("making staging folder %s: %w", p, err)
	}
	return p, nil
}

// isCode reports whether err is an S3 answer with one of codes. The SDK
// names an answer with no body by its HTTP status ("NotFound",
// "PreconditionFailed"), so a status need not be checked apart; and a
// status alone would confuse NoSuchBucket with NoSuchKey.
func isCode(err error, codes ...string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && slices.Contains(codes, ae.ErrorCode())
}
