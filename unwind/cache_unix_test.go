//go:build unix

package unwind

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestCache: a table put is got back by its identity; nothing is found
// for another; a symbolic link for the directory, or one writable by
// others, is refused; a file replaced by a symbolic link is not followed.
func TestCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "iotrace", "unwind")
	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	tab := &Table{Arch: AMD64, Kind: KindCFI, Rows: []Row{{Off: 0x1000, Rule: Rule{CFA: CFASP, CFAOff: 8, RA: RegAtCFA, RAOff: -8}}, {Off: 0x1010, Rule: Rule{CFA: CFANone}}}, FDEs: 1}
	if err := c.Put("gnu:0123", tab); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get("gnu:0123")
	if err != nil || !reflect.DeepEqual(got, tab) {
		t.Fatalf("got %+v, %v", got, err)
	}
	if got, err := c.Get("gnu:4567"); got != nil || err != nil {
		t.Errorf("another identity: %+v, %v", got, err)
	}
	st, err := os.Stat(c.path("gnu:0123"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v, %v", st.Mode(), err)
	}

	// A file replaced by a link to a readable table elsewhere.
	other := filepath.Join(t.TempDir(), "t")
	b, _ := tab.MarshalBinary()
	if err := os.WriteFile(other, b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(c.path("gnu:0123"))
	if err := os.Symlink(other, c.path("gnu:0123")); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get("gnu:0123"); got != nil || err == nil {
		t.Errorf("a symbolic link was followed: %+v, %v", got, err)
	}

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCache(link); err == nil {
		t.Error("a symbolic link to the cache directory was used")
	}
	open := filepath.Join(t.TempDir(), "iotrace", "open")
	if err := os.MkdirAll(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if _, err := OpenCache(open); err == nil {
		t.Error("a directory writable by others was used")
	}
}
