package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// dir is a lake in a local (or mounted network) directory.
type dir struct{ root string }

func openDir(location string) (*dir, error) {
	abs, err := filepath.Abs(location)
	if err != nil {
		return nil, fmt.Errorf("lake %s: %w", location, err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("lake %s is a file, not a directory", location)
	}
	return &dir{root: resolve(abs)}, nil
}

// resolve follows symbolic links in the part of p that exists, so one lake
// has one name however it is reached: the store keys what it exported by
// that name, and a second name would look like a new, empty lake.
func resolve(p string) string {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

func (d *dir) Location() string { return d.root }

func (d *dir) Key() string { return d.root }

func (d *dir) path(key string) string { return filepath.Join(d.root, filepath.FromSlash(key)) }

// List walks the folder under prefix. Names starting with "." or "_" are
// skipped below it, as Spark and Hive skip them: they are others' work in
// progress.
func (d *dir) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	start := d.path(prefix)
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p != start && (strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_")) {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		out = append(out, Object{Key: filepath.ToSlash(rel), Size: fi.Size(),
			ETag: strconv.FormatInt(fi.Size(), 10) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing lake %s: %w", d.root, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (d *dir) Local(ctx context.Context, objs []Object) ([]string, error) {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = d.path(o.Key)
	}
	return out, nil
}

// Put syncs src, renames it into place, and syncs the folder, so the file
// is whole under its name even after a power cut, not only a kill.
func (d *dir) Put(ctx context.Context, key, src string) error {
	if !localKey(key) {
		return fmt.Errorf("publishing %q in %s: %w", key, d.root, errKey)
	}
	dst := d.path(key)
	if err := syncFile(src); err != nil {
		return fmt.Errorf("publishing %s: %w", dst, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("publishing %s: %w", dst, err)
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("publishing %s: %w", dst, err)
	}
	return syncDir(filepath.Dir(dst))
}

// Create links a finished temporary file to key: link(2) fails when the
// name exists, so two runners cannot both create it.
func (d *dir) Create(ctx context.Context, key string, data []byte) ([]byte, error) {
	if !localKey(key) {
		return nil, fmt.Errorf("creating %q in %s: %w", key, d.root, errKey)
	}
	dst := d.path(key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dst, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+path.Base(key)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", dst, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", dst, err)
	}
	if err := os.Link(tmp.Name(), dst); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("creating %s: %w", dst, err)
		}
		got, rerr := os.ReadFile(dst)
		if rerr != nil {
			return nil, fmt.Errorf("reading %s: %w", dst, rerr)
		}
		return got, nil
	}
	return nil, syncDir(filepath.Dir(dst))
}

// Staging refuses a name with "..": RemoveAll would then clear a folder
// outside _staging, the lake itself with "../..".
func (d *dir) Staging(ctx context.Context, name string) (string, error) {
	if !localKey(name) {
		return "", fmt.Errorf("staging folder %q: %w", name, errKey)
	}
	p := filepath.Join(d.root, "_staging", name)
	if err := os.RemoveAll(p); err != nil {
		return "", fmt.Errorf("clearing staging folder %s: %w", p, err)
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", fmt.Errorf("making staging folder %s: %w", p, err)
	}
	return p, nil
}

func syncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	// Some filesystems cannot sync a directory; the rename stands anyway.
	f.Sync()
	return nil
}
