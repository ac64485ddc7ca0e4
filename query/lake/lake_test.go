package lake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// backends are the lakes every behavioural test runs on.
var backends = []struct {
	name string
	open func(t *testing.T) Lake
}{
	{"dir", func(t *testing.T) Lake {
		l, err := Open(context.Background(), filepath.Join(t.TempDir(), "lake"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}},
	{"s3", func(t *testing.T) Lake { return newFakeS3(t, "lake").open(t, "s3://lake/team/a") }},
}

// writeStaged writes content to a file in l's staging folder.
func writeStaged(t *testing.T, l Lake, name, content string) string {
	t.Helper()
	d, err := l.Staging(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func put(t *testing.T, l Lake, key, content string) {
	t.Helper()
	src := writeStaged(t, l, "f.parquet", content)
	if err := l.Put(context.Background(), key, src); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); !os.IsNotExist(err) {
		t.Errorf("Put(%s) left its source %s: %v", key, src, err)
	}
}

// listed is objs as "key:size ...".
func listed(objs []Object) string {
	var b []string
	for _, o := range objs {
		b = append(b, fmt.Sprintf("%s:%d", o.Key, o.Size))
	}
	return strings.Join(b, " ")
}

func TestLakePutList(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			l := b.open(t)
			for key, content := range map[string]string{
				"events/system=b/date=1/part-0.parquet": "bbb",
				"events/system=a/date=1/part-0.parquet": "aa",
				"events/system=a/_tmp/part-9.parquet":   "x",
				"events/system=a/.part-8.parquet":       "x",
				"events2/part-0.parquet":                "e2",
				"_schema/v1.json":                       "{}",
				"runs/part-0.parquet":                   "r",
			} {
				put(t, l, key, content)
			}
			for _, c := range []struct{ prefix, want string }{
				{"", "events/system=a/date=1/part-0.parquet:2 events/system=b/date=1/part-0.parquet:3 events2/part-0.parquet:2 runs/part-0.parquet:1"},
				{"events", "events/system=a/date=1/part-0.parquet:2 events/system=b/date=1/part-0.parquet:3"},
				{"events/", "events/system=a/date=1/part-0.parquet:2 events/system=b/date=1/part-0.parquet:3"},
				{"events/system=a", "events/system=a/date=1/part-0.parquet:2"},
				{"events/system=a/date=1/part-0.parquet", "events/system=a/date=1/part-0.parquet:2"},
				{"_schema", "_schema/v1.json:2"},
				{"_schema/v1.json", "_schema/v1.json:2"},
				{"ev", ""},
				{"missing", ""},
			} {
				objs, err := l.List(context.Background(), c.prefix)
				if err != nil {
					t.Fatalf("List(%q): %v", c.prefix, err)
				}
				if got := listed(objs); got != c.want {
					t.Errorf("List(%q) = %q, want %q", c.prefix, got, c.want)
				}
			}
		})
	}
}

// TestLakeLocal checks content, and that a replaced object gets a new
// ETag and its new content.
func TestLakeLocal(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			l := b.open(t)
			put(t, l, "t/d=1/a.parquet", "first a")
			put(t, l, "t/d=2/b.parquet", "b")
			read := func(want ...string) []Object {
				t.Helper()
				objs, err := l.List(ctx, "t")
				if err != nil {
					t.Fatal(err)
				}
				paths, err := l.Local(ctx, objs)
				if err != nil {
					t.Fatal(err)
				}
				if len(paths) != len(want) {
					t.Fatalf("Local gave %d paths, want %d", len(paths), len(want))
				}
				for i, p := range paths {
					if got, err := os.ReadFile(p); err != nil || string(got) != want[i] {
						t.Errorf("%s: %q, %v; want %q", objs[i].Key, got, err, want[i])
					}
					if !strings.HasSuffix(filepath.ToSlash(p), "/"+objs[i].Key) {
						t.Errorf("%s is at %s, which does not end in its key", objs[i].Key, p)
					}
				}
				return objs
			}
			before := read("first a", "b")
			put(t, l, "t/d=1/a.parquet", "second a")
			after := read("second a", "b")
			if before[0].ETag == after[0].ETag || before[1].ETag != after[1].ETag {
				t.Errorf("ETags before %+v, after %+v: want only the first changed", before, after)
			}
			if paths, err := l.Local(ctx, nil); err != nil || len(paths) != 0 {
				t.Errorf("Local(nil) = %v, %v", paths, err)
			}
		})
	}
}

func TestLakeCreate(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			l := b.open(t)
			if got, err := l.Create(ctx, "meta/id", []byte("one")); err != nil || got != nil {
				t.Fatalf("first Create = %q, %v; want nil, nil", got, err)
			}
			if got, err := l.Create(ctx, "meta/id", []byte("two")); err != nil || string(got) != "one" {
				t.Fatalf("second Create = %q, %v; want \"one\", nil", got, err)
			}
			objs, err := l.List(ctx, "meta")
			if err != nil || listed(objs) != "meta/id:3" {
				t.Fatalf("List = %q, %v", listed(objs), err)
			}
		})
	}
}

// TestLakeCreateRace has creators race for one key: one wins and the
// others all read what it wrote.
func TestLakeCreateRace(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			l := b.open(t)
			const n = 8
			got := make([][]byte, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					got[i], errs[i] = l.Create(context.Background(), "owner", []byte(fmt.Sprint("creator ", i)))
				})
			}
			wg.Wait()
			winner := -1
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("creator %d: %v", i, errs[i])
				}
				if got[i] == nil {
					if winner >= 0 {
						t.Fatalf("creators %d and %d both created", winner, i)
					}
					winner = i
				}
			}
			if winner < 0 {
				t.Fatal("no creator created")
			}
			for i := range n {
				if i != winner && string(got[i]) != fmt.Sprint("creator ", winner) {
					t.Errorf("creator %d read %q, want the winner %d's", i, got[i], winner)
				}
			}
		})
	}
}

func TestLakeStaging(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			l := b.open(t)
			p := writeStaged(t, l, "left.parquet", "x")
			d, err := l.Staging(context.Background(), "test")
			if err != nil {
				t.Fatal(err)
			}
			if d != filepath.Dir(p) {
				t.Errorf("Staging moved from %s to %s", filepath.Dir(p), d)
			}
			if ents, err := os.ReadDir(d); err != nil || len(ents) != 0 {
				t.Errorf("Staging left %d files (%v)", len(ents), err)
			}
			if objs, err := l.List(context.Background(), ""); err != nil || len(objs) != 0 {
				t.Errorf("staging shows in the lake: %q, %v", listed(objs), err)
			}
		})
	}
}

// TestLakeBadKeys checks that keys and staging names cannot leave the
// lake: "../.." as a staging name would clear the lake's parent.
func TestLakeBadKeys(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			l := b.open(t)
			src := writeStaged(t, l, "f.parquet", "x")
			for _, key := range []string{"", "../x", "../..", "/abs", "a//b", "a/./b", "a/", `a\b`} {
				if err := l.Put(ctx, key, src); !errors.Is(err, errKey) {
					t.Errorf("Put(%q) = %v, want errKey", key, err)
				}
				if _, err := l.Create(ctx, key, []byte("x")); !errors.Is(err, errKey) {
					t.Errorf("Create(%q) = %v, want errKey", key, err)
				}
				if _, err := l.Staging(ctx, key); !errors.Is(err, errKey) {
					t.Errorf("Staging(%q) = %v, want errKey", key, err)
				}
			}
			if _, err := os.Stat(src); err != nil {
				t.Errorf("a refused call removed %s: %v", src, err)
			}
		})
	}
}
