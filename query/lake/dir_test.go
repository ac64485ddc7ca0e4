package lake

import (
	"os"
	"path/filepath"
	"testing"
)

// A lake reached through a symbolic link has the name of its real folder,
// whether or not the folder exists yet.
func TestDirLocationFollowsLinks(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	realName, _ := filepath.EvalSymlinks(real)
	for _, c := range []struct{ loc, want string }{
		{link, realName},
		{filepath.Join(link, "lake", "new"), filepath.Join(realName, "lake", "new")},
	} {
		d, err := openDir(c.loc)
		if err != nil {
			t.Fatal(err)
		}
		if d.Location() != c.want {
			t.Errorf("%s: location %s, want %s", c.loc, d.Location(), c.want)
		}
	}
}
