package symbolize

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/crafted"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestParseID: what identities look like; anything else is not one.
func TestParseID(t *testing.T) {
	for _, c := range []struct {
		id   string
		kind idKind
	}{
		{"", idNone},
		{"pe:5f3e2a1b/1000", idNone},
		{"gnu:0123456789abcdef0123456789abcdef01234567", idGNU},
		{"gnu:0123456789abcdef", idGNU},
		{"gnu:../../../../tmp/x", idInvalid},
		{"gnu:0123456789ABCDEF0123", idInvalid}, // upper case: never written
		{"gnu:0123456789abcde", idInvalid},      // odd
		{"gnu:ab", idInvalid},                   // too short to be a hash
		{"gnu:" + strings.Repeat("ab", 65), idInvalid},
		{"go:abcDEF_-123/xyz-_/abc/def", idGo},
		{"go:a/../../b", idInvalid},
		{"go:", idInvalid},
		{"pdb:ntdll.pdb/1EB1A6B6A5F3B4D2E1C2D3A4B5C6D7E81", idPDB},
		{"pdb:evil.pdb/../../../../tmp/y", idInvalid},
		{"pdb:../x.pdb/1EB1A6B6A5F3B4D2E1C2D3A4B5C6D7E81", idInvalid},
		{"pdb:..\\x.pdb/1EB1A6B6A5F3B4D2E1C2D3A4B5C6D7E81", idInvalid},
		{"pdb:c:x.pdb/1EB1A6B6A5F3B4D2E1C2D3A4B5C6D7E81", idInvalid},
		{"pdb:x.pdb/1EB1A6B6", idInvalid},
		{"pdb:x.pdb", idInvalid},
		{"elf:whatever", idInvalid},
	} {
		if k, _, _ := parseID(c.id); k != c.kind {
			t.Errorf("parseID(%q) = %d, want %d", c.id, k, c.kind)
		}
	}
	if _, ok := within("/syms", "..", "x"); ok {
		t.Error("within accepted ..")
	}
	if p, ok := within("/syms", ".build-id", "ab", "cd.debug"); !ok || p != filepath.Join("/syms", ".build-id", "ab", "cd.debug") {
		t.Errorf("within: %q %v", p, ok)
	}
}

func sparseELF(t *testing.T, path string, size int64) {
	t.Helper()
	if err := crafted.SparseELF(path, size); err != nil {
		t.Fatal(err)
	}
}

// allocated returns the bytes fn allocated.
func allocatedBy(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestSparseELF: a 4 KB sparse ELF whose symbol table claims 2 GiB
// (issue 25, item 5: 7.7 GB and 79 s) is refused, reading little.
func TestSparseELF(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("skipped: a file extended on Windows is not sparse")
	}
	path := filepath.Join(testenv.TempDir(t), "sparse.so")
	sparseELF(t, path, 2<<30)
	if st, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if a, ok := allocated(st); ok && a > 1<<20 {
		t.Skipf("skipped: this file system stores the hole (%d bytes on disk)", a)
	}
	var err error
	t0 := time.Now()
	alloc := allocatedBy(func() { _, err = openFile(path, true, nil) })
	if !errors.Is(err, errBudget) {
		t.Errorf("openFile: %v, want the budget's refusal", err)
	}
	if d := time.Since(t0); alloc > 100<<20 || d > 2*time.Second {
		t.Errorf("refusing the file took %d MB and %v", alloc>>20, d)
	}
	s := New(Options{DebugDirs: []string{}})
	m := &Module{Path: path, ID: "gnu:0123456789abcdef0123456789abcdef01234567", Start: 0x1000, End: 0x2000}
	if f := s.Symbolize(m, 0x1100); f.Reason != BadFile {
		t.Errorf("frame %+v: reason %q, want %q", f, f.Reason, BadFile)
	}
}

// TestReadBudget: a file's budget is twice its size; a sparse file's is
// bounded by what it takes on disk.
func TestReadBudget(t *testing.T) {
	dir := testenv.TempDir(t)
	full := filepath.Join(dir, "full")
	if err := os.WriteFile(full, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(full)
	if b := readBudget(st); b != 2<<20+budgetSlack {
		t.Errorf("budget of a 1 MiB file: %d", b)
	}
	sparse := filepath.Join(dir, "sparse")
	sparseELF(t, sparse, 1<<30)
	st, _ = os.Stat(sparse)
	if a, ok := allocated(st); ok && a > 0 && a < 1<<20 {
		if b := readBudget(st); b > 64<<20 {
			t.Errorf("budget of a sparse file of %d bytes on disk: %d", a, b)
		}
	}
}
