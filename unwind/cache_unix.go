//go:build unix

package unwind

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MaxCacheFile bounds a table file read from the cache.
const MaxCacheFile = 256 << 20

// Cache keeps tables on disk across runs, one file per file identity
// (a build ID): a table is built once per build, whatever path or
// process maps it.
//
// The directory and its files are the user's own and private: the
// directories iotrace creates are 0700, and one that is a symbolic
// link, another user's, or writable by others is refused; files are
// created 0600 (written to a temporary file, then renamed), opened
// without following symbolic links, and read only when they are regular
// files of the user's. What a file holds is checked whole before use
// (Table.UnmarshalBinary).
type Cache struct {
	dir string
}

// DefaultCacheDir is $XDG_CACHE_HOME/iotrace/unwind, or
// ~/.cache/iotrace/unwind.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("unwind: cache directory: %w", err)
	}
	return filepath.Join(base, "iotrace", "unwind"), nil
}

// OpenCache returns the cache in dir, creating the directory and its
// parent (0700, checked: iotrace's own) and the directories above them
// (the user's cache directory) when missing.
func OpenCache(dir string) (*Cache, error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(filepath.Dir(parent), 0o700); err != nil {
		return nil, fmt.Errorf("unwind: cache directory: %w", err)
	}
	for _, d := range []string{parent, dir} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("unwind: cache directory: %w", err)
		}
		if err := privateDir(d); err != nil {
			return nil, err
		}
	}
	return &Cache{dir: dir}, nil
}

// privateDir checks that d is a directory (not a symbolic link) of this
// user that no one else may write to.
func privateDir(d string) error {
	st, err := os.Lstat(d)
	if err != nil {
		return fmt.Errorf("unwind: cache directory: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("unwind: cache directory %s is a symbolic link: not used", d)
	case !st.IsDir():
		return fmt.Errorf("unwind: cache directory %s is not a directory", d)
	case !ok || int(sys.Uid) != os.Geteuid():
		return fmt.Errorf("unwind: cache directory %s belongs to another user: not used", d)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("unwind: cache directory %s is writable by others (%v): not used", d, st.Mode().Perm())
	}
	return nil
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// path names the file of identity id (hashed: an identity is data),
// for tables of this package's BuildVersion.
func (c *Cache) path(id string) string {
	h := sha256.Sum256([]byte(id))
	return filepath.Join(c.dir, fmt.Sprintf("t%d-%s", BuildVersion, hex.EncodeToString(h[:16])))
}

// Get returns the cached table of identity id; nil and no error when
// there is none.
func (c *Cache) Get(id string) (*Table, error) {
	f, err := os.OpenFile(c.path(id), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unwind: cache: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("unwind: cache: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.Mode().IsRegular() || !ok || int(sys.Uid) != os.Geteuid() || st.Size() > MaxCacheFile {
		return nil, fmt.Errorf("unwind: cache file %s is not a regular file of this user's under %d bytes: not used", f.Name(), MaxCacheFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxCacheFile+1))
	if err != nil {
		return nil, fmt.Errorf("unwind: cache: %w", err)
	}
	t := &Table{}
	if err := t.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, f.Name())
	}
	return t, nil
}

// Put stores the table of identity id.
func (c *Cache) Put(id string, t *Table) error {
	b, err := t.MarshalBinary()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, ".tmp-")
	if err != nil {
		return fmt.Errorf("unwind: cache: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, c.path(id))
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("unwind: cache: %w", werr)
	}
	return nil
}
