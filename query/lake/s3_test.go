package lake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Made-up credentials: no error may show them.
const (
	testKeyID  = "AKIAORCHSTATTESTKEY1"
	testSecret = "s3cr3t-Orchstat-Test-Value-9f8e7d"
)

// fakeS3 is an in-process S3 (gofakes3) holding one empty bucket, with a
// count of the object GETs it served.
type fakeS3 struct {
	url  string
	gets atomic.Int64
	cl   *s3.Client
}

func newFakeS3(t *testing.T, bucket string) *fakeS3 {
	t.Helper()
	f := &fakeS3{}
	h := gofakes3.New(s3mem.New()).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A GET of /bucket/key is a download; /bucket?list-type=2 a listing.
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") > 0 {
			f.gets.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	l, err := openS3(context.Background(), "s3://"+bucket, Options{CacheDir: t.TempDir(), Getenv: f.env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	f.cl = asS3(l).cl
	if _, err := f.cl.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return f
}

// env is an environment naming the fake server, with more overriding it.
func (f *fakeS3) env(more map[string]string) func(string) string {
	e := map[string]string{
		"AWS_ENDPOINT_URL_S3":   f.url,
		"AWS_ACCESS_KEY_ID":     testKeyID,
		"AWS_SECRET_ACCESS_KEY": testSecret,
		"AWS_REGION":            "eu-west-1",
	}
	for k, v := range more {
		e[k] = v
	}
	return func(k string) string { return e[k] }
}

func (f *fakeS3) open(t *testing.T, location string) *s3Lake {
	t.Helper()
	l, err := Open(context.Background(), location, Options{CacheDir: t.TempDir(), Getenv: f.env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return asS3(l)
}

func TestS3Locations(t *testing.T) {
	f := newFakeS3(t, "bkt")
	for _, c := range []struct{ loc, want, prefix, err string }{
		{loc: "s3://b", want: "s3://b", prefix: ""},
		{loc: "s3://b/", want: "s3://b", prefix: ""},
		{loc: "s3://b/p", want: "s3://b/p", prefix: "p/"},
		{loc: "s3://b/p/q/", want: "s3://b/p/q", prefix: "p/q/"},
		{loc: "s3://b//p//q", want: "s3://b/p/q", prefix: "p/q/"},
		{loc: "s3://", err: "lake s3:// names no bucket: pass s3://bucket or s3://bucket/prefix"},
		{loc: "s3:///p", err: "lake s3:// names no bucket: pass s3://bucket or s3://bucket/prefix"},
		{loc: "s3://id:" + testSecret + "@b/p", err: "lake s3://: a bucket name holds only letters, digits, '.', '-' and '_'"},
		{loc: "s3://b/p/../q", err: `lake s3://b: prefix "p/../q" has a . or .. segment`},
	} {
		l, err := Open(context.Background(), c.loc, Options{CacheDir: t.TempDir(), Getenv: f.env(nil)})
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("Open(%q) error = %v, want %q", c.loc, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Open(%q): %v", c.loc, err)
			continue
		}
		if got := l.Location(); got != c.want {
			t.Errorf("Open(%q).Location() = %q, want %q", c.loc, got, c.want)
		}
		if got := asS3(l).prefix; got != c.prefix {
			t.Errorf("Open(%q) prefix = %q, want %q", c.loc, got, c.prefix)
		}
	}
}

// TestS3KeysUnderPrefix checks that objects land at prefix + "/" + key in
// the bucket and that List returns them relative to the lake's root.
func TestS3KeysUnderPrefix(t *testing.T) {
	ctx := context.Background()
	f := newFakeS3(t, "bkt")
	for _, loc := range []string{"s3://bkt/team/x/", "s3://bkt"} {
		l := f.open(t, loc)
		src := writeStaged(t, l, "a.parquet", "abc")
		if err := l.Put(ctx, "t/a.parquet", src); err != nil {
			t.Fatal(err)
		}
	}
	out, err := f.cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	if got, want := strings.Join(keys, " "), "t/a.parquet team/x/t/a.parquet"; got != want {
		t.Errorf("bucket holds %q, want %q", got, want)
	}
	objs, err := f.open(t, "s3://bkt/team").List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Key != "x/t/a.parquet" || objs[0].Size != 3 {
		t.Errorf("List under s3://bkt/team = %+v, want one x/t/a.parquet of 3 bytes", objs)
	}
}

// TestS3ListPages lists more keys than one ListObjectsV2 page holds.
func TestS3ListPages(t *testing.T) {
	ctx := context.Background()
	f := newFakeS3(t, "bkt")
	const n = 1100
	for i := range n {
		key := fmt.Sprintf("lake/events/%04d.parquet", i)
		if _, err := f.cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key),
			Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := f.open(t, "s3://bkt/lake").List(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != n {
		t.Fatalf("List gave %d objects, want %d", len(objs), n)
	}
	for i, o := range objs {
		if want := fmt.Sprintf("events/%04d.parquet", i); o.Key != want || o.Size != 1 {
			t.Fatalf("object %d = %+v, want %s of 1 byte", i, o, want)
		}
	}
}

// TestS3LocalCache checks that Local downloads only what changed.
func TestS3LocalCache(t *testing.T) {
	ctx := context.Background()
	f := newFakeS3(t, "bkt")
	l := f.open(t, "s3://bkt/lake")
	put(t, l, "events/date=2026-01-01/part-0.parquet", "one")
	put(t, l, "events/date=2026-01-02/part-0.parquet", "two")
	put(t, l, "runs/date=2026-01-01/part-0.parquet", "three")
	local := func(wantGets int64, want ...string) {
		t.Helper()
		objs, err := l.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		before := f.gets.Load()
		paths, err := l.Local(ctx, objs)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.gets.Load() - before; got != wantGets {
			t.Errorf("Local made %d GETs, want %d", got, wantGets)
		}
		for i, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil || string(b) != want[i] {
				t.Errorf("%s holds %q (%v), want %q", objs[i].Key, b, err, want[i])
			}
			if wantP := filepath.Join(l.cacheDir, "objects", filepath.FromSlash(objs[i].Key)); p != wantP {
				t.Errorf("%s cached at %s, want %s", objs[i].Key, p, wantP)
			}
		}
	}
	local(3, "one", "two", "three")
	local(0, "one", "two", "three")
	put(t, l, "events/date=2026-01-02/part-0.parquet", "two, longer")
	local(1, "one", "two, longer", "three")
	// A new Lake on the same cache folder reads the index from disk.
	l2, err := Open(ctx, "s3://bkt/lake/", Options{CacheDir: filepath.Dir(l.cacheDir), Getenv: f.env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	l = asS3(l2)
	local(0, "one", "two, longer", "three")
	checkCacheFiles(t, l.cacheDir)
}

// checkCacheFiles checks that no temporary file is left and that folders
// are private.
func checkCacheFiles(t *testing.T, root string) {
	t.Helper()
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file left: %s", p)
		}
		if fi.IsDir() && fi.Mode().Perm() != 0o700 {
			t.Errorf("cache folder %s has mode %v, want 0700", p, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestS3LocalShort checks that a download shorter than listed fails.
func TestS3LocalShort(t *testing.T) {
	ctx := context.Background()
	f := newFakeS3(t, "bkt")
	l := f.open(t, "s3://bkt")
	if err := l.Put(ctx, "t/a.parquet", writeStaged(t, l, "a", "abc")); err != nil {
		t.Fatal(err)
	}
	objs, err := l.List(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	objs[0].Size = 4
	_, err = l.Local(ctx, objs)
	if want := "downloading s3://bkt/t/a.parquet: got 3 bytes, want 4"; err == nil || err.Error() != want {
		t.Errorf("Local error = %v, want %q", err, want)
	}
	_, err = l.Local(ctx, []Object{{Key: "../x.parquet", Size: 1}})
	if want := "caching s3://bkt/../x.parquet: " + errKey.Error(); err == nil || err.Error() != want {
		t.Errorf("Local error = %v, want %q", err, want)
	}
	checkCacheFiles(t, l.cacheDir)
}

// TestS3PutTooLarge refuses a file a single PUT cannot take, before any
// request.
func TestS3PutTooLarge(t *testing.T) {
	f := newFakeS3(t, "bkt")
	l := f.open(t, "s3://bkt")
	src := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(src, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(src, maxPut+1); err != nil { // sparse
		t.Skip("cannot make a sparse file:", err)
	}
	err := l.Put(context.Background(), "big.parquet", src)
	want := "publishing s3://bkt/big.parquet: " + src + " is 5368709121 bytes, over the 5 GiB a single S3 upload takes"
	if err == nil || err.Error() != want {
		t.Errorf("Put error = %v, want %q", err, want)
	}
}

// TestS3ErrorsHideCredentials checks failing calls' errors for the keys.
func TestS3ErrorsHideCredentials(t *testing.T) {
	ctx := context.Background()
	f := newFakeS3(t, "bkt")
	for _, c := range []struct {
		name, loc string
		env       map[string]string
		obj, code string
	}{
		{"no such bucket", "s3://nope/p", nil, "s3://nope/p/x", "NoSuchBucket"},
		{"unreachable", "s3://bkt/p", map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1"}, "s3://bkt/p/x", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Open(ctx, c.loc, Options{CacheDir: t.TempDir(), Getenv: f.env(c.env)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.List(ctx, "x")
			_, cerr := l.Create(ctx, "x", []byte("v"))
			_, gerr := l.Local(ctx, []Object{{Key: "x", Size: 1, ETag: `"e"`}})
			perr := l.Put(ctx, "x", writeStaged(t, l, "x", "v"))
			for _, err := range []error{err, cerr, gerr, perr} {
				if err == nil || !strings.Contains(err.Error(), c.obj+": ") {
					t.Errorf("error %v does not name the object", err)
					continue
				}
				for _, secret := range []string{testSecret, testKeyID} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error shows a credential: %v", err)
					}
				}
			}
			if c.code != "" && !isCode(cerr, c.code) {
				t.Errorf("Create error %v, want S3 code %s", cerr, c.code)
			}
		})
	}
}

// TestS3Config checks settings the SDK takes from getenv or supplies.
func TestS3Config(t *testing.T) {
	for _, c := range []struct {
		name       string
		env        map[string]string
		region     string
		pathStyle  bool
		noEndpoint bool
	}{
		{"endpoint", nil, "eu-west-1", true, false},
		{"AWS_ENDPOINT_URL", map[string]string{"AWS_ENDPOINT_URL_S3": "", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}, "eu-west-1", true, false},
		{"AWS", map[string]string{"AWS_ENDPOINT_URL_S3": "", "AWS_REGION": ""}, "us-east-1", false, true},
		{"forced path style", map[string]string{"AWS_ENDPOINT_URL_S3": "", "ORCHSTAT_S3_PATH_STYLE": "1"}, "eu-west-1", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeS3{url: "http://127.0.0.1:8"}
			l, err := Open(context.Background(), "s3://bkt", Options{CacheDir: t.TempDir(), Getenv: f.env(c.env)})
			if err != nil {
				t.Fatal(err)
			}
			o := asS3(l).cl.Options()
			if o.Region != c.region || o.UsePathStyle != c.pathStyle {
				t.Errorf("region %q, path style %v; want %q, %v", o.Region, o.UsePathStyle, c.region, c.pathStyle)
			}
			if c.noEndpoint && o.BaseEndpoint != nil && os.Getenv("AWS_ENDPOINT_URL_S3")+os.Getenv("AWS_ENDPOINT_URL") == "" {
				t.Errorf("endpoint %q, want none", *o.BaseEndpoint)
			}
		})
	}
}

// TestS3ProcessEnv checks that with no Getenv the process's environment
// is read: endpoint, credentials and region; and, with a Getenv that hides
// the endpoint, that the SDK reads it from the process itself and path
// style follows.
func TestS3ProcessEnv(t *testing.T) {
	f := newFakeS3(t, "bkt")
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_S3": f.url, "AWS_ACCESS_KEY_ID": testKeyID,
		"AWS_SECRET_ACCESS_KEY": testSecret, "AWS_REGION": "eu-west-1", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none")} {
		t.Setenv(k, v)
	}
	hide := func(k string) string {
		if strings.HasPrefix(k, "AWS_ENDPOINT_URL") {
			return ""
		}
		return os.Getenv(k)
	}
	for _, getenv := range []func(string) string{nil, hide} {
		l, err := Open(context.Background(), "s3://bkt/p", Options{CacheDir: t.TempDir(), Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprint("k", getenv == nil)
		if _, err := l.Create(context.Background(), key, []byte("v")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.cl.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("p/" + key)}); err != nil {
			t.Errorf("the object is not on the fake server: %v", err)
		}
	}
}

// TestS3SharedFiles checks a profile of the shared files naming region,
// endpoint and keys, with no AWS_* variable but the files' names.
func TestS3SharedFiles(t *testing.T) {
	f := newFakeS3(t, "bkt")
	d := t.TempDir()
	cfg, creds := filepath.Join(d, "config"), filepath.Join(d, "credentials")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cfg, "[profile lake]\nregion = eu-north-1\nendpoint_url = "+f.url+"\n")
	write(creds, "[lake]\naws_access_key_id = "+testKeyID+"\naws_secret_access_key = "+testSecret+"\n")
	env := map[string]string{"AWS_PROFILE": "lake", "AWS_CONFIG_FILE": cfg, "AWS_SHARED_CREDENTIALS_FILE": creds}
	l, err := Open(context.Background(), "s3://bkt/p", Options{CacheDir: t.TempDir(),
		Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	o := asS3(l).cl.Options()
	if o.Region != "eu-north-1" || !o.UsePathStyle || aws.ToString(o.BaseEndpoint) != f.url {
		t.Errorf("region %q, path style %v, endpoint %q", o.Region, o.UsePathStyle, aws.ToString(o.BaseEndpoint))
	}
	if _, err := l.Create(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
}

// TestS3Cancel checks that a cancelled context stops List and Local.
func TestS3Cancel(t *testing.T) {
	f := newFakeS3(t, "bkt")
	l := f.open(t, "s3://bkt")
	put(t, l, "a.parquet", "a")
	objs, err := l.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.List(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List error = %v, want context.Canceled", err)
	}
	if _, err := l.Local(ctx, objs); !errors.Is(err, context.Canceled) {
		t.Errorf("Local error = %v, want context.Canceled", err)
	}
	if paths, err := l.Local(context.Background(), objs); err != nil || len(paths) != 1 {
		t.Errorf("Local after a cancelled one = %v, %v", paths, err)
	}
}

// asS3 is the S3 lake behind the one Open returns.
func asS3(l Lake) *s3Lake { return l.(scrubbing).s3Lake }

// An endpoint that answers 403 and echoes the signed request, and one
// whose URL carries a user and password the SDK cannot parse: no error
// shows a credential, in any of the forms an echo takes.
func TestS3EchoedCredentialsRedacted(t *testing.T) {
	ctx := context.Background()
	const token = "FwoGZXIvYXdzEJr//////////wEaDEXAMPLETOKEN+/=="
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>denied: %s %s token=%s</Message></Error>`,
			r.Header.Get("Authorization"), r.URL.RawQuery, r.Header.Get("X-Amz-Security-Token"))
	}))
	defer echo.Close()
	f := &fakeS3{url: echo.URL}
	for _, c := range []struct {
		name string
		env  map[string]string
	}{
		{"echoing 403", map[string]string{"AWS_SESSION_TOKEN": token}},
		{"user:password in the endpoint", map[string]string{"AWS_ENDPOINT_URL_S3": "http://admin:hunter2pass@127.0.0.1:1/%zz"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Open(ctx, "s3://bkt/p", Options{CacheDir: t.TempDir(), Getenv: f.env(c.env)})
			errs := []error{err}
			if err == nil {
				_, lerr := l.List(ctx, "x")
				_, cerr := l.Create(ctx, "x", []byte("v"))
				errs = []error{lerr, cerr}
			}
			for _, err := range errs {
				if err == nil {
					t.Fatal("no error")
				}
				t.Log(err)
				for _, secret := range []string{testSecret, testKeyID, token, "hunter2pass", "Credential=" + testKeyID[:4]} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error shows %q: %v", secret, err)
					}
				}
			}
		})
	}
}

// One bucket and prefix on two endpoints are two lakes: what a store
// exported to one says nothing of the other.
func TestS3KeyNamesTheEndpoint(t *testing.T) {
	a, b := &fakeS3{url: "http://127.0.0.1:9001"}, &fakeS3{url: "http://user:pw@127.0.0.1:9002"}
	la, _ := Open(context.Background(), "s3://bkt/fleet", Options{CacheDir: t.TempDir(), Getenv: a.env(nil)})
	lb, _ := Open(context.Background(), "s3://bkt/fleet", Options{CacheDir: t.TempDir(), Getenv: b.env(nil)})
	if la.Location() != lb.Location() || la.Key() == lb.Key() || strings.Contains(lb.Key(), "pw") {
		t.Errorf("keys %q and %q for %q", la.Key(), lb.Key(), la.Location())
	}
}
