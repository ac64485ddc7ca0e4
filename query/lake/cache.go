package lake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// downloads is how many objects Local fetches at once: enough to hide
// S3's latency, few enough not to starve a small runner.
const downloads = 8

// lakeCacheDir makes the folder caching one lake: the bucket's name for
// people, and a hash of endpoint, bucket and prefix so that two lakes
// never share it. It is private: others' lakes may be.
func lakeCacheDir(root, endpoint, bucket, prefix string) (string, error) {
	if root == "" {
		u, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder: %w", err)
		}
		root = filepath.Join(u, "orchstat", "lake")
	}
	h := sha256.Sum256([]byte(endpoint + "\x00" + bucket + "\x00" + prefix))
	d := filepath.Join(root, bucket+"-"+hex.EncodeToString(h[:6]))
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("making cache folder: %w", err)
	}
	return d, nil
}

// ReplicaPath is where the rows of the lake at location are kept between
// reads (see query.OpenLake), in the cache folder.
func ReplicaPath(o Options, location string) (string, error) {
	root := o.CacheDir
	if root == "" {
		u, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder: %w", err)
		}
		root = filepath.Join(u, "orchstat", "lake")
	}
	dir := filepath.Join(root, "replicas")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("making cache folder: %w", err)
	}
	name := []byte(filepath.Base(location))
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			name[i] = '_'
		}
	}
	h := sha256.Sum256([]byte(location))
	return filepath.Join(dir, string(name)+"-"+hex.EncodeToString(h[:6])+".duckdb"), nil
}

// errKey refuses a key or name that localKey refuses.
var errKey = errors.New("not a plain relative path: no empty, . or .. segment, no leading or trailing /, no backslash")

// localKey reports whether key stays inside the folder it is joined to: a
// lake's listing is others' data, and must not write outside the cache.
func localKey(key string) bool {
	return key != "" && !strings.Contains(key, `\`) && filepath.IsLocal(filepath.FromSlash(key)) &&
		path.Clean(key) == key
}

// cached is what the index knows of a downloaded object.
type cached struct {
	ETag string `json:"etag"`
	Size int64  `json:"size"`
}

func (l *s3Lake) indexPath() string { return filepath.Join(l.cacheDir, "index.json") }

func (l *s3Lake) objPath(key string) string {
	return filepath.Join(l.cacheDir, "objects", filepath.FromSlash(key))
}

// readIndex reads the cache's index; a missing or damaged one is empty,
// which costs downloads, not correctness.
func (l *s3Lake) readIndex() map[string]cached {
	idx := map[string]cached{}
	if b, err := os.ReadFile(l.indexPath()); err == nil {
		if json.Unmarshal(b, &idx) != nil {
			idx = map[string]cached{}
		}
	}
	return idx
}

// saveIndex merges got into the index on disk, re-read so that another
// process's entries written meanwhile survive, and replaces it whole.
// Two processes saving at once may still lose one's entries: they are
// then downloaded again.
func (l *s3Lake) saveIndex(got map[string]cached) error {
	if len(got) == 0 {
		return nil
	}
	idx := l.readIndex()
	for k, c := range got {
		idx[k] = c
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	return writeFileAtomic(l.indexPath(), b)
}

func writeFileAtomic(dst string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// Local downloads the objects whose ETag the cache does not hold, at most
// downloads at a time, and returns each one's cached path. The paths keep
// the keys' folders, so DuckDB reads their Hive partitions from them.
func (l *s3Lake) Local(ctx context.Context, objs []Object) ([]string, error) {
	out := make([]string, len(objs))
	idx := l.readIndex()
	var need []int
	for i, o := range objs {
		if !localKey(o.Key) {
			return nil, fmt.Errorf("caching %s: %w", l.url(o.Key), errKey)
		}
		out[i] = l.objPath(o.Key)
		if c, ok := idx[o.Key]; ok && c.ETag == o.ETag && c.Size == o.Size && sizeIs(out[i], o.Size) {
			continue
		}
		need = append(need, i)
	}
	got, err := l.fetchAll(ctx, objs, need)
	if serr := l.saveIndex(got); err == nil && serr != nil {
		err = fmt.Errorf("saving lake cache index %s: %w", l.indexPath(), serr)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func sizeIs(p string, size int64) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

// fetchAll downloads objs[need...], stopping at the first error. It
// returns what it downloaded, even then, for the index.
func (l *s3Lake) fetchAll(ctx context.Context, objs []Object, need []int) (map[string]cached, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		got   = map[string]cached{}
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, downloads)
	)
	for _, i := range need {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(o Object) {
			defer func() { <-sem; wg.Done() }()
			c, err := l.fetch(ctx, o)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
					cancel()
				}
				return
			}
			got[o.Key] = c
		}(objs[i])
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = fmt.Errorf("caching lake %s: %w", l.Location(), ctx.Err())
	}
	return got, first
}

// fetch downloads one object beside its cached path and renames it into
// place: a reader of the cache sees the old content or the new, whole.
// If the object was replaced since it was listed, the newer content is
// kept, under the ETag it came with, as a local lake would show it.
func (l *s3Lake) fetch(ctx context.Context, o Object) (cached, error) {
	dst := l.objPath(o.Key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return cached{}, fmt.Errorf("caching %s: %w", l.url(o.Key), err)
	}
	res, err := l.cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(l.bucket), Key: aws.String(l.prefix + o.Key)})
	if err != nil {
		return cached{}, fmt.Errorf("downloading %s: %w", l.url(o.Key), err)
	}
	defer res.Body.Close()
	c := cached{ETag: aws.ToString(res.ETag), Size: o.Size}
	if c.ETag == "" {
		c.ETag = o.ETag
	}
	if c.ETag != o.ETag && res.ContentLength != nil {
		c.Size = *res.ContentLength
	}
	// Not named *.parquet: DuckDB globs would read a half-written file.
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return cached{}, fmt.Errorf("caching %s: %w", l.url(o.Key), err)
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, res.Body)
	if err == nil && n != c.Size {
		err = fmt.Errorf("got %d bytes, want %d", n, c.Size)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return cached{}, fmt.Errorf("downloading %s: %w", l.url(o.Key), err)
	}
	return c, nil
}
