package symbolize

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/symbolize/pdb"
	"github.com/iotrace/iotrace/symbolize/peid"
)

// TestPDBSymbols: a Windows image's frames are named from the PDB its
// CodeView record names, found in a symbol store (NAME.pdb/GUIDAGE/NAME.pdb)
// under --symbols; a PDB of another GUID filed under the image's key is
// not used (counted as a mismatch), and no PDB leaves module+0xoffset.
func TestPDBSymbols(t *testing.T) {
	for _, tool := range []string{"clang", "lld-link"} {
		if _, err := exec.LookPath(tool); err != nil {
			if testenv.Required() {
				t.Fatalf("%s not installed (scripts/setup installs it)", tool)
			}
			t.Skipf("%s not installed (scripts/setup installs it)", tool)
		}
	}
	dir := t.TempDir()
	link := func(out, src string) {
		obj := filepath.Join(dir, "m.obj")
		for _, c := range [][]string{
			{"clang", "--target=x86_64-pc-windows-msvc", "-O1", "-g", "-gcodeview", "-c", src, "-o", obj},
			{"lld-link", "/entry:mainCRTStartup", "/subsystem:console", "/nodefaultlib", "/debug", "/machine:x64",
				"/pdb:" + out + ".pdb", "/out:" + out + ".exe", obj},
		} {
			if b, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%q: %v\n%s", c, err, b)
			}
		}
	}
	link(filepath.Join(dir, "modules"), "pdb/testdata/modules.c")
	exe, err := os.ReadFile(filepath.Join(dir, "modules.exe"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peid.Read(bytes.NewReader(exe), int64(len(exe)))
	if err != nil || !id.HasPDB {
		t.Fatalf("identity %+v: %v", id, err)
	}
	pf, err := os.ReadFile(filepath.Join(dir, "modules.pdb"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pdb.Parse(bytes.NewReader(pf), int64(len(pf)))
	if err != nil {
		t.Fatal(err)
	}
	var outer uint32
	for _, s := range p.Publics {
		if s.Name == "outer_fn" {
			outer = s.RVA
		}
	}
	key := pdb.SymStoreKey(id.PDBGUID, id.PDBAge)
	// fileStore files data as the module's PDB in a symbol store named
	// name, under the module's key.
	fileStore := func(name string, data []byte) string {
		store := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(store, "modules.pdb", key), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(store, "modules.pdb", key, "modules.pdb"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return store
	}
	store := fileStore("store", pf)
	const base = 0x140000000
	m := &Module{Path: `C:\app\modules.exe`, ID: PDBID(id.PDBName, id.PDBGUID, id.PDBAge), Start: base, End: base + uint64(id.SizeOfImage)}
	s := New(Options{Dirs: []string{store}, DebugDirs: []string{}, NoModulePath: true})
	if f := s.Symbolize(m, base+uint64(outer)+2); f.Function != "outer_fn" || f.Reason != Resolved {
		t.Errorf("frame %+v (%s), want outer_fn", f, f)
	}

	// Another build (another GUID) filed under the first one's key.
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(other, "modules"), "pdb/testdata/modules.c")
	of, err := os.ReadFile(filepath.Join(other, "modules.pdb"))
	if err != nil {
		t.Fatal(err)
	}
	op, err := pdb.Parse(bytes.NewReader(of), int64(len(of)))
	if err != nil {
		t.Fatal(err)
	}
	if op.GUID == p.GUID {
		t.Fatal("two links gave the same PDB GUID")
	}
	// unnamed checks that a store holding data leaves outer_fn's frame
	// module+offset, counted once for why.
	unnamed := func(what, name string, data []byte, why Reason) {
		t.Helper()
		s := New(Options{Dirs: []string{fileStore(name, data)}, DebugDirs: []string{}, NoModulePath: true})
		if f := s.Symbolize(m, base+uint64(outer)+2); f.Function != "" || f.Reason != why || f.String() != "modules.exe+0x"+strconv.FormatUint(uint64(outer)+2, 16) {
			t.Errorf("frame from %s: %+v (%s)", what, f, f)
		}
		if c := s.Counts(); c[why] != 1 {
			t.Errorf("%s: counts %v, want one %q", what, c, why)
		}
	}
	unnamed("a PDB of another GUID", "bad", of, IDMismatch)
	// The right PDB, damaged: outer_fn's public record names a section
	// the module does not have. Read before, it left inner_fn covering
	// outer_fn's code.
	dmg := bytes.Clone(pf)
	at := -1
	for i := 0; ; {
		j := bytes.Index(dmg[i:], []byte("outer_fn\x00"))
		if j < 0 {
			break
		}
		if k := i + j; k >= 12 && dmg[k-12] == 0x0e && dmg[k-11] == 0x11 { // S_PUB32
			at = k - 2 // its section
			break
		}
		i += j + 1
	}
	if at < 0 {
		t.Fatal("no S_PUB32 record of outer_fn in the PDB")
	}
	dmg[at] = 0x7f
	unnamed("a damaged PDB of the right GUID", "damaged", dmg, BadFile)

	s = New(Options{Dirs: []string{t.TempDir()}, DebugDirs: []string{}, NoModulePath: true})
	if f := s.Symbolize(m, base+uint64(outer)); f.Reason != NoFile {
		t.Errorf("frame without a PDB: %+v", f)
	}
}

// TestWindowsReasons: a Windows image the trace knows by its PE time
// stamp and size alone ("pe:", no PDB GUID and age) counts as recorded
// without a debug identity, even where its file exists (it is no ELF
// file to read symbols from); the reasons' wording names the Windows
// identity beside the ELF one.
func TestWindowsReasons(t *testing.T) {
	path, err := filepath.Abs("peid/testdata/modules.exe")
	if err != nil {
		t.Fatal(err)
	}
	m := &Module{Path: path, ID: "pe:6B068FB85000", Start: 0x140000000, End: 0x140005000}
	s := New(Options{DebugDirs: []string{}})
	if f := s.Symbolize(m, 0x140001010); f.Reason != NoID || f.String() != "modules.exe+0x1010" {
		t.Errorf("frame of a pe: module: %+v (%s), want %v", f, f, NoID)
	}
	for _, r := range []Reason{NoID, NoFile, IDMismatch} {
		if s := r.String(); !strings.Contains(s, "PDB GUID and age") || !strings.Contains(s, "build-id") {
			t.Errorf("reason %q does not name both identities", s)
		}
	}
}
