//go:build windows && (amd64 || arm64)

package dbghelp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// store lays the fixture's PDB out in a symbol store under a new
// directory, and returns the directory.
func store(t *testing.T) string {
	t.Helper()
	pdbData, err := os.ReadFile("testdata/modules.pdb")
	if err != nil {
		t.Fatal(err)
	}
	dir := testenv.TempDir(t)
	ent := filepath.Join(dir, "store", "modules.pdb", fixtureKey)
	if err := os.MkdirAll(ent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ent, "modules.pdb"), pdbData, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDbghelpImagePresent: the module's image is at its recorded path
// (reading a trace on the machine that recorded it), its PDB only in the
// --symbols store: dbghelp names outer_fn and inner_fn.
func TestDbghelpImagePresent(t *testing.T) {
	dir := store(t)
	exe, err := os.ReadFile("testdata/modules.exe")
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "app", "modules.exe")
	if err := os.MkdirAll(filepath.Dir(img), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	r := New(Options{Dirs: []string{filepath.Join(dir, "store")}, Getenv: func(string) string { return "" }})
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range []struct {
		rva  uint64
		name string
	}{{outerRVA + 2, "outer_fn"}, {innerRVA + 1, "inner_fn"}} {
		res := r.Resolve(fixtureID, img, 0x3000, c.rva)
		if res.Outcome != Named || res.Function != c.name {
			t.Errorf("rva %#x: %+v (%v), want %s", c.rva, res, res.Err, c.name)
		}
		t.Logf("rva %#x: %s+%#x %s:%d", c.rva, res.Function, res.Displacement, res.File, res.Line)
	}
	// Another identity for the same image: its PDB is not there.
	// (The store's root is on the path, and dbghelp may find the PDB of
	// age 1 there by searching it: it must not be used.)
	if res := r.Resolve("pdb:modules.pdb/"+fixtureKey[:32]+"2", img, 0x3000, outerRVA); res.Outcome != Unmatched && res.Outcome != NoPDB {
		t.Errorf("identity of another age: %+v, want unmatched or no PDB", res)
	} else {
		t.Logf("identity of another age: %v (%v)", res.Outcome, res.Err)
	}
}

// TestDbghelpImageGone: only the identity is known (the image is not on
// this machine): dbghelp is given the CodeView record. Wine's dbghelp
// ignores that data (SymLoadModuleExW: "Unsupported load data
// parameter"), so under wine the frame must stay unnamed, and counted.
func TestDbghelpImageGone(t *testing.T) {
	dir := store(t)
	r := New(Options{Dirs: []string{filepath.Join(dir, "store")}, Getenv: func(string) string { return "" }})
	defer r.Close()
	res := r.Resolve(fixtureID, `C:\gone\modules.exe`, 0x3000, outerRVA+2)
	t.Logf("%+v (%v)", res, res.Err)
	if testenv.UnderWine() {
		if res.Outcome == Named {
			t.Errorf("wine named a module it has no image for: %+v", res)
		}
		return
	}
	if res.Outcome != Named || res.Function != "outer_fn" {
		t.Errorf("got %+v (%v), want outer_fn", res, res.Err)
	}
}

// TestDbghelpNTSymbolPath: without --symbols, the PDB is found through
// _NT_SYMBOL_PATH (here the store entry's directory), and only there.
func TestDbghelpNTSymbolPath(t *testing.T) {
	dir := store(t)
	exe, err := os.ReadFile("testdata/modules.exe")
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "app", "modules.exe")
	if err := os.MkdirAll(filepath.Dir(img), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  string
		want Outcome
	}{
		{filepath.Join(dir, "store", "modules.pdb", fixtureKey), Named},
		{filepath.Join(dir, "elsewhere"), NoPDB},
	} {
		r := New(Options{Getenv: func(k string) string {
			if k == "_NT_SYMBOL_PATH" {
				return c.env
			}
			return ""
		}})
		res := r.Resolve(fixtureID, img, 0x3000, outerRVA+2)
		if res.Outcome != c.want || (c.want == Named) != (res.Function == "outer_fn") {
			t.Errorf("_NT_SYMBOL_PATH=%s: %+v (%v), want %v", c.env, res, res.Err, c.want)
		}
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}
}
