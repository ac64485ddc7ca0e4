// Package lake is where a Parquet lake's files live: a local directory, or
// a prefix of an S3 bucket. It moves whole files in and out and knows
// nothing of Parquet or DuckDB; query writes and reads the files.
//
// A lake is shared by many runners that never coordinate, and read while
// they write, so every file appears whole (Put) and nothing is ever
// deleted from it: a reader that listed a file must still find it.
package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Object is one file of the lake. Key is its path below the lake's root,
// with slashes. ETag changes whenever the content does.
type Object struct {
	Key  string
	Size int64
	ETag string
}

// Lake is a lake's storage.
type Lake interface {
	// Location names the lake as the user did, without credentials.
	Location() string
	// Key identifies the lake in what is kept about it (what a store
	// exported to it, its local replica): Location, and for S3 the
	// endpoint too, without credentials.
	Key() string
	// List returns the objects at or below prefix, a folder ("events/")
	// or one key, sorted by key. A prefix with nothing there is not an
	// error.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Local returns, for each object, a local file holding its content,
	// for DuckDB to read. A remote lake downloads into its cache only the
	// objects whose ETag it does not hold already.
	Local(ctx context.Context, objs []Object) ([]string, error)
	// Put publishes the finished local file src at key, replacing what
	// is there: a reader sees the old content or the new, never a part.
	// src is consumed.
	Put(ctx context.Context, key, src string) error
	// Create writes data at key unless an object is there already, and
	// returns that object's content if so (nil when it created it).
	Create(ctx context.Context, key string, data []byte) (existing []byte, err error)
	// Staging returns an empty directory, private to name, to write files
	// in before Put. A local lake keeps it on its own filesystem, so Put
	// is a rename.
	Staging(ctx context.Context, name string) (string, error)
}

// Options are what opening a lake takes from the world.
type Options struct {
	// CacheDir holds remote lakes' downloaded files, one folder per lake;
	// default os.UserCacheDir()/orchstat/lake.
	CacheDir string
	// Getenv reads the environment for S3 settings and credentials
	// (os.Getenv when nil).
	Getenv func(string) string
}

// Open opens the lake at location: "s3://bucket/prefix" or a directory.
func Open(ctx context.Context, location string, o Options) (Lake, error) {
	switch {
	case location == "":
		return nil, errors.New("no lake named: pass --lake DIR or --lake s3://bucket/prefix")
	case strings.HasPrefix(location, "s3://"):
		return openS3(ctx, location, o)
	case strings.Contains(location, "://"):
		return nil, fmt.Errorf("lake %s: only local directories and s3:// are supported", location)
	}
	return openDir(location)
}
