package symbolize

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/symbolize/dbghelp"
)

// fakePE answers with fixed results, and records what it was asked.
type fakePE struct {
	res   dbghelp.Result
	asked []string
}

func (f *fakePE) Resolve(id, path string, size, rva uint64) dbghelp.Result {
	f.asked = append(f.asked, fmt.Sprintf("%s %s %#x %#x", id, path, size, rva))
	return f.res
}

// TestPEResolverFirst: a Windows module's frame goes to the system
// symbol engine first, with the module's identity, path, size and the
// RVA; its name is used as is.
func TestPEResolverFirst(t *testing.T) {
	fp := &fakePE{res: dbghelp.Result{Function: "CreateFileW", File: `d:\os\file.c`, Line: 12, Outcome: dbghelp.Named}}
	s := New(Options{PE: fp, DebugDirs: []string{}, NoModulePath: true})
	m := &Module{Path: `C:\Windows\System32\kernelbase.dll`, ID: "pdb:kernelbase.pdb/F00D48B2BB5AC9BE4C4C44205044422E1", Start: 0x7ff800000000, End: 0x7ff800300000}
	f := s.Symbolize(m, 0x7ff800012345)
	if f.Function != "CreateFileW" || f.Line != 12 || f.Reason != Resolved || f.Module != "kernelbase.dll" || f.Offset != 0x12345 {
		t.Errorf("frame %+v", f)
	}
	if want := m.ID + ` C:\Windows\System32\kernelbase.dll 0x300000 0x12345`; len(fp.asked) != 1 || fp.asked[0] != want {
		t.Errorf("asked %q, want %q", fp.asked, want)
	}
	// ELF modules never go there.
	s.Symbolize(&Module{Path: "/lib/libc.so.6", ID: "gnu:abcd", Start: 0x1000, End: 0x2000}, 0x1800)
	if len(fp.asked) != 1 {
		t.Errorf("an ELF module was sent to the PE resolver: %q", fp.asked)
	}
	if c := s.Counts(); c[Resolved] != 1 {
		t.Errorf("counts %v", c)
	}
}

// TestPEResolverFallback: what the engine cannot name goes to the PDB
// reader (--symbols store), then stays module+0xoffset, counted once per
// frame with the more telling reason of the two.
func TestPEResolverFallback(t *testing.T) {
	pf, err := os.ReadFile("dbghelp/testdata/modules.pdb")
	if err != nil {
		t.Fatal(err)
	}
	const key = "E9A561C00FB7F7264C4C44205044422E1" // symbolize/dbghelp's fixture
	store := testenv.TempDir(t)
	if err := os.MkdirAll(filepath.Join(store, "modules.pdb", key), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, "modules.pdb", key, "modules.pdb"), pf, 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Module{Path: `C:\app\modules.exe`, ID: "pdb:modules.pdb/" + key, Start: 0x140000000, End: 0x140003000}

	// The engine finds no PDB: the reader names the frame from the store.
	fp := &fakePE{res: dbghelp.Result{Outcome: dbghelp.NoPDB}}
	s := New(Options{PE: fp, Dirs: []string{store}, DebugDirs: []string{}, NoModulePath: true})
	if f := s.Symbolize(m, 0x140001012); f.Function != "outer_fn" || f.Reason != Resolved {
		t.Errorf("fallback to the PDB reader: %+v", f)
	}
	if len(fp.asked) != 1 {
		t.Errorf("engine asked %d times", len(fp.asked))
	}

	for _, c := range []struct {
		outcome dbghelp.Outcome
		dirs    []string
		want    Reason
	}{
		{dbghelp.NoPDB, nil, NoFile},
		{dbghelp.Unmatched, nil, IDMismatch},       // the engine's reason is the more telling
		{dbghelp.NoSymbol, nil, NoSymbol},          // the engine had the PDB, no symbol there
		{dbghelp.Failed, nil, NoFile},              // the engine could not be used: the reader's reason
		{dbghelp.NoPDB, []string{store}, NoSymbol}, // the reader had the PDB, no symbol at 0x2500
	} {
		fp := &fakePE{res: dbghelp.Result{Outcome: c.outcome, Err: errors.New("dbghelp: no dbghelp.dll")}}
		s := New(Options{PE: fp, Dirs: c.dirs, DebugDirs: []string{}, NoModulePath: true})
		f := s.Symbolize(m, 0x140002500)
		if f.Function != "" || f.Reason != c.want || f.String() != "modules.exe+0x2500" {
			t.Errorf("engine %v, dirs %v: %+v (%s), want %v", c.outcome, c.dirs, f, f, c.want)
		}
		var n uint64
		for _, v := range s.Counts() {
			n += v
		}
		if n != 1 {
			t.Errorf("engine %v: %d frames counted, want 1", c.outcome, n)
		}
		if n, err := s.PEFailures(); (n == 1) != (c.outcome == dbghelp.Failed) || (err != nil) != (n == 1) {
			t.Errorf("engine %v: PEFailures %d, %v", c.outcome, n, err)
		}
		probs := strings.Join(s.Problems(), "\n")
		if got := strings.Contains(probs, "no dbghelp.dll"); got != (c.outcome == dbghelp.Failed) {
			t.Errorf("engine %v: problems %q", c.outcome, probs)
		}
	}
}
