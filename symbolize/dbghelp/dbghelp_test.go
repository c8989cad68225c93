package dbghelp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/symbolize/pdb"
	"github.com/iotrace/iotrace/symbolize/peid"
)

// The fixture: testdata/modules.exe and modules.pdb, built from
// ../pdb/testdata/modules.c by
//
//	clang --target=x86_64-pc-windows-msvc -O1 -g -gcodeview -c modules.c -o m.obj
//	lld-link /entry:mainCRTStartup /subsystem:console /nodefaultlib /debug /machine:x64 \
//	  /pdb:modules.pdb /pdbaltpath:modules.pdb /out:modules.exe m.obj
//
// Its identity as `llvm-pdbutil dump -summary modules.pdb` prints it: GUID
// {E9A561C0-0FB7-F726-4C4C-44205044422E}, age 1 (and `llvm-readobj
// --coff-debug-directory modules.exe` the same, with PDB name
// modules.pdb). `llvm-pdbutil dump -publics` puts inner_fn at 0001:0000
// and outer_fn at 0001:0016 (decimal offsets), and `llvm-readobj
// --sections modules.exe` .text at RVA 0x1000.
const (
	fixtureKey = "E9A561C00FB7F7264C4C44205044422E1"
	fixtureID  = "pdb:modules.pdb/" + fixtureKey
	innerRVA   = 0x1000
	outerRVA   = 0x1010
)

// TestFixture: the image and PDB of testdata are one build, with the
// identity and addresses above, read with packages peid and pdb.
func TestFixture(t *testing.T) {
	exe, err := os.ReadFile("testdata/modules.exe")
	if err != nil {
		t.Fatal(err)
	}
	id, err := peid.Read(bytes.NewReader(exe), int64(len(exe)))
	if err != nil || !id.HasPDB {
		t.Fatalf("%+v: %v", id, err)
	}
	if got := "pdb:" + id.PDBName + "/" + pdb.SymStoreKey(id.PDBGUID, id.PDBAge); got != fixtureID {
		t.Errorf("image identity %s, want %s", got, fixtureID)
	}
	pf, err := os.ReadFile("testdata/modules.pdb")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pdb.Parse(bytes.NewReader(pf), int64(len(pf)))
	if err != nil {
		t.Fatal(err)
	}
	if got := pdb.SymStoreKey(p.GUID, p.Age); got != fixtureKey {
		t.Errorf("PDB key %s, want %s", got, fixtureKey)
	}
	for rva, want := range map[uint32]string{innerRVA: "inner_fn", outerRVA: "outer_fn"} {
		if s, off, ok := p.Lookup(rva); !ok || s.Name != want || off != 0 {
			t.Errorf("rva %#x: %+v+%d, want %s", rva, s, off, want)
		}
	}
}

func TestParseID(t *testing.T) {
	guid := [16]byte{0xb2, 0x48, 0x0d, 0xf0, 0x5a, 0xbb, 0xbe, 0xc9, 0x4c, 0x4c, 0x44, 0x20, 0x50, 0x44, 0x42, 0x2e}
	for _, age := range []uint32{1, 0x2a, 0xffffffff} {
		// The key as package pdb (and so symbolize.PDBID) writes it.
		id := "pdb:ntkrnlmp.pdb/" + pdb.SymStoreKey(guid, age)
		got, err := ParseID(id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "ntkrnlmp.pdb" || got.GUID != guid || got.Age != age {
			t.Errorf("%s: %+v", id, got)
		}
		if got.Key() != pdb.SymStoreKey(guid, age) {
			t.Errorf("key %s, want %s", got.Key(), pdb.SymStoreKey(guid, age))
		}
	}
	for _, bad := range []string{
		"", "gnu:abcd", "pdb:", "pdb:x.pdb", "pdb:/F00D48B2BB5AC9BE4C4C44205044422E1",
		"pdb:x.pdb/F00D48B2BB5AC9BE4C4C44205044422E",          // no age
		"pdb:x.pdb/F00D48B2BB5AC9BE4C4C44205044422G1",         // not hex
		"pdb:x.pdb/F00D48B2BB5AC9BE4C4C44205044422E123456789", // age too long
		"pdb:a;b.pdb/F00D48B2BB5AC9BE4C4C44205044422E1",       // would split the symbol path
		`pdb:a\b.pdb/F00D48B2BB5AC9BE4C4C44205044422E1`,
		"pdb:x.pdb/-00D48B2BB5AC9BE4C4C44205044422E1",
	} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

// TestCodeView: the record built from an identity is, byte for byte, the
// one lld-link wrote into the test image (peid's fixture; llvm-readobj
// --coff-debug-directory prints its GUID, age 1 and name /tmp/pdbt/x.pdb).
func TestCodeView(t *testing.T) {
	exe, err := os.ReadFile("../peid/testdata/modules.exe")
	if err != nil {
		t.Fatal(err)
	}
	id, err := peid.Read(bytes.NewReader(exe), int64(len(exe)))
	if err != nil || !id.HasPDB {
		t.Fatalf("%+v: %v", id, err)
	}
	got := Identity{Name: id.PDBName, GUID: id.PDBGUID, Age: id.PDBAge}.CodeView()
	i := bytes.Index(exe, []byte("RSDS"))
	if i < 0 || i+len(got) > len(exe) {
		t.Fatal("no RSDS record in the image")
	}
	if want := exe[i : i+len(got)]; !bytes.Equal(got, want) {
		t.Errorf("CodeView record\n got % x\nwant % x", got, want)
	}
	if len(got) != 0x28 {
		t.Errorf("record of %d bytes, the image's debug directory says 0x28", len(got))
	}
}

func TestDebugDirs(t *testing.T) {
	cv := Identity{Name: "a.pdb", Age: 3}.CodeView()
	le := binary.LittleEndian
	b := DebugDirs(cv, 0x11223344)
	// IMAGE_DEBUG_DIRECTORY: Characteristics@0, TimeDateStamp@4,
	// Major@8, Minor@10, Type@12, SizeOfData@16, AddressOfRawData@20,
	// PointerToRawData@24; 28 bytes, the record after it.
	if len(b) != 28+len(cv) || le.Uint32(b[0:]) != 0 || le.Uint32(b[4:]) != 0x11223344 || le.Uint32(b[8:]) != 0 ||
		le.Uint32(b[12:]) != 2 || le.Uint32(b[16:]) != uint32(len(cv)) || le.Uint32(b[20:]) != 0 ||
		le.Uint32(b[24:]) != 28 || !bytes.Equal(b[28:], cv) {
		t.Errorf("debug directory % x", b)
	}
	// The same layout as the image's own debug directory entry (peid's
	// fixture: lld-link's entry, SizeOfData 0x28, Type 2).
	exe, err := os.ReadFile("../peid/testdata/modules.exe")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(exe, []byte("RSDS"))
	if i < 0 {
		t.Fatal("no RSDS record")
	}
	var entry []byte
	for j := 0; j+28 <= len(exe); j += 4 {
		if le.Uint32(exe[j+12:]) == 2 && le.Uint32(exe[j+16:]) == 0x28 && le.Uint32(exe[j+24:]) == uint32(i) {
			entry = exe[j : j+28]
		}
	}
	if entry == nil {
		t.Fatal("no CodeView debug directory entry pointing at the record")
	}
	got := DebugDirs(exe[i:i+0x28], le.Uint32(entry[4:]))
	if !bytes.Equal(got[:20], entry[:20]) {
		t.Errorf("entry\n got % x\nwant % x", got[:28], entry)
	}
}

type dirInfo struct{ fs.FileInfo }

func (dirInfo) IsDir() bool { return true }

func statIn(dirs ...string) func(string) (os.FileInfo, error) {
	return func(p string) (os.FileInfo, error) {
		for _, d := range dirs {
			if p == d {
				return dirInfo{}, nil
			}
		}
		return nil, os.ErrNotExist
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const (
	guidHex = "F00D48B2BB5AC9BE4C4C44205044422E"
	id1     = "pdb:app.pdb/" + guidHex + "1"
)

func TestSearchPath(t *testing.T) {
	ident, err := ParseID(id1)
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join("s1", "app.pdb", guidHex+"1")
	r := NewWith(Options{
		Dirs:   []string{"s1", "s2", "bad;dir"},
		Getenv: env(map[string]string{"_NT_SYMBOL_PATH": `srv*C:\sym*https://msdl.microsoft.com/download/symbols; C:\more`, "_NT_ALT_SYMBOL_PATH": `C:\alt`}),
		Stat:   statIn(store),
	}, nil)
	want := strings.Join([]string{store, "s1", "s2", `C:\alt`, `srv*C:\sym*https://msdl.microsoft.com/download/symbols`, `C:\more`}, ";")
	if got := r.SearchPath(&ident); got != want {
		t.Errorf("search path\n got %s\nwant %s", got, want)
	}
	if got, want := r.SearchPath(nil), strings.Join([]string{"s1", "s2", `C:\alt`, `srv*C:\sym*https://msdl.microsoft.com/download/symbols`, `C:\more`}, ";"); got != want {
		t.Errorf("session path\n got %s\nwant %s", got, want)
	}
	// A store entry filed under the lower-case name is found too.
	lower := filepath.Join("s1", "app.pdb", guidHex+"1")
	ident.Name = "App.pdb"
	r = NewWith(Options{Dirs: []string{"s1"}, Getenv: env(nil), Stat: statIn(lower)}, nil)
	if got := r.SearchPath(&ident); got != lower+";s1" {
		t.Errorf("lower-case store entry: %s", got)
	}
}

func newFake(t *testing.T, f *fakeAPI, dirs []string, stat ...string) (*Resolver, *int) {
	t.Helper()
	opens := 0
	return NewWith(Options{Dirs: dirs, Getenv: env(nil), Stat: statIn(stat...)}, func() (API, error) {
		opens++
		return f, nil
	}), &opens
}

func TestResolve(t *testing.T) {
	ident, _ := ParseID(id1)
	store := filepath.Join("syms", "app.pdb", ident.Key())
	good := &fakePDB{dir: store, name: "app.pdb", guid: ident.GUID, age: ident.Age,
		syms: map[uint32]string{0x1000: "inner_fn", 0x1010: "outer_fn"}, lines: map[uint32]int{0x1012: 7}}
	f := &fakeAPI{pdbs: []*fakePDB{good}}
	r, opens := newFake(t, f, []string{"syms"}, store)

	res := r.Resolve(id1, `C:\app\app.exe`, 0x3000, 0x1012)
	if res.Outcome != Named || res.Function != "outer_fn" || res.Displacement != 2 || res.Line != 7 || res.File != `C:\src\m.c` {
		t.Errorf("got %+v", res)
	}
	if res := r.Resolve(id1, `C:\app\app.exe`, 0x3000, 0x1004); res.Function != "inner_fn" || res.Displacement != 4 || res.File != "" {
		t.Errorf("got %+v", res)
	}
	// Below every symbol, and outside the module's recorded size.
	if res := r.Resolve(id1, `C:\app\app.exe`, 0x3000, 0x10); res.Outcome != NoSymbol || res.Function != "" {
		t.Errorf("below the symbols: %+v", res)
	}
	if res := r.Resolve(id1, `C:\app\app.exe`, 0x3000, 0x3000); res.Outcome != NoSymbol {
		t.Errorf("past the module: %+v", res)
	}
	if *opens != 1 || len(f.loads) != 1 || f.loads[0] != `C:\app\app.exe` {
		t.Errorf("dbghelp opened %d times, loads %q: want one of each", *opens, f.loads)
	}
	if !strings.HasPrefix(f.searchPaths[0], store+";") {
		t.Errorf("search path for the load %q does not start with the store entry", f.searchPaths[0])
	}

	// Missing: the PDB is nowhere; one load, however many frames.
	missing := "pdb:gone.pdb/" + guidHex + "2"
	for range 3 {
		if res := r.Resolve(missing, `C:\app\gone.dll`, 0x2000, 0x1000); res.Outcome != NoPDB || res.Function != "" || res.Err == nil {
			t.Errorf("missing PDB: %+v", res)
		}
	}
	if len(f.loads) != 2 {
		t.Errorf("loads %q: the missing module was looked for more than once", f.loads)
	}

	// A malformed identity never reaches dbghelp.
	if res := r.Resolve("pdb:x.pdb/nothex", "x.dll", 0x1000, 0); res.Outcome != Failed || res.Err == nil {
		t.Errorf("malformed: %+v", res)
	}
	if len(f.loads) != 2 {
		t.Errorf("loads %q after a malformed identity", f.loads)
	}

	// Every load got its own range: no overlap error from the fake, and
	// the unused module was unloaded.
	if f.unloads != 1 || len(f.mods) != 1 {
		t.Errorf("unloads %d, modules %d: the missing module should be unloaded", f.unloads, len(f.mods))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !f.cleaned || len(f.mods) != 0 {
		t.Errorf("Close: cleaned %v, %d modules left", f.cleaned, len(f.mods))
	}
	if res := r.Resolve(id1, `C:\app\app.exe`, 0x3000, 0x1012); res.Outcome != Failed {
		t.Errorf("after Close: %+v", res)
	}
}

// TestResolveUnmatched: a dbghelp that loads a PDB of the right name but
// another GUID or age (a rebuilt program's PDB) is not believed.
func TestResolveUnmatched(t *testing.T) {
	ident, _ := ParseID(id1)
	other := ident.GUID
	other[15]++
	for _, p := range []*fakePDB{
		{dir: "syms", name: "app.pdb", guid: other, age: ident.Age, syms: map[uint32]string{0x1000: "wrong"}},
		{dir: "syms", name: "app.pdb", guid: ident.GUID, age: ident.Age + 1, syms: map[uint32]string{0x1000: "wrong"}},
	} {
		f := &fakeAPI{pdbs: []*fakePDB{p}, acceptAny: true}
		r, _ := newFake(t, f, []string{"syms"})
		if res := r.Resolve(id1, "app.exe", 0x2000, 0x1000); res.Outcome != Unmatched || res.Function != "" || res.Err == nil {
			t.Errorf("PDB %x age %d: %+v", p.guid, p.age, res)
		}
		if len(f.mods) != 0 {
			t.Errorf("the unmatched module stayed loaded")
		}
	}
	// Loaded, without symbols.
	f := &fakeAPI{pdbs: []*fakePDB{{dir: "syms", name: "app.pdb", guid: ident.GUID, age: ident.Age, empty: true}}}
	r, _ := newFake(t, f, []string{"syms"})
	if res := r.Resolve(id1, "app.exe", 0x2000, 0x1000); res.Outcome != NoPDB {
		t.Errorf("PDB without symbols: %+v", res)
	}
}

// TestResolveNoDbghelp: when dbghelp cannot be opened or initialized,
// every module says so (Failed, with the reason), and dbghelp is tried
// once.
func TestResolveNoDbghelp(t *testing.T) {
	opens := 0
	r := NewWith(Options{Getenv: env(nil)}, func() (API, error) { opens++; return nil, errors.New("no dbghelp.dll") })
	for _, id := range []string{id1, "pdb:b.pdb/" + guidHex + "2"} {
		if res := r.Resolve(id, "x.dll", 0x1000, 0); res.Outcome != Failed || res.Err == nil || !strings.Contains(res.Err.Error(), "no dbghelp.dll") {
			t.Errorf("%s: %+v", id, res)
		}
	}
	f := &fakeAPI{initErr: errors.New("access denied")}
	r2, n := newFake(t, f, nil)
	for range 2 {
		if res := r2.Resolve(id1, "x.dll", 0x1000, 0); res.Outcome != Failed || !strings.Contains(res.Err.Error(), "access denied") {
			t.Errorf("%+v", res)
		}
	}
	if opens != 1 || *n != 1 {
		t.Errorf("opened %d and %d times, want once each", opens, *n)
	}
	if err := r2.Close(); err != nil {
		t.Error(err)
	}
}

// TestResolveBases: modules get disjoint ranges of the session's address
// space, whatever their recorded addresses; a module of unknown size
// gets a large one.
func TestResolveBases(t *testing.T) {
	var pdbs []*fakePDB
	var ids []string
	for i := range 5 {
		id := "pdb:m" + string(rune('a'+i)) + ".pdb/" + guidHex + "1"
		ident, _ := ParseID(id)
		pdbs = append(pdbs, &fakePDB{dir: "syms", name: ident.Name, guid: ident.GUID, age: 1, syms: map[uint32]string{0: "f" + string(rune('a'+i))}})
		ids = append(ids, id)
	}
	f := &fakeAPI{pdbs: pdbs}
	r, _ := newFake(t, f, []string{"syms"})
	sizes := []uint64{0x1000, 0, 0x12345, 1 << 40, 0x10000}
	for i, id := range ids {
		if res := r.Resolve(id, "m.dll", sizes[i], 0x10); res.Function != "f"+string(rune('a'+i)) {
			t.Errorf("%s: %+v", id, res)
		}
	}
	if len(f.mods) != 5 {
		t.Errorf("%d modules loaded", len(f.mods))
	}
}

// FuzzParseID: any string gives an identity or an error, never a panic;
// an accepted identity's key reads back to the same identity.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{fixtureID, "pdb:ntkrnlmp.pdb/" + guidHex + "FFFFFFFF", "pdb:x/", "pdb:a.pdb/" + guidHex, "gnu:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			return
		}
		back, err := ParseID("pdb:" + id.Name + "/" + id.Key())
		if err != nil || back != id {
			t.Fatalf("%q: %+v, read back %+v (%v)", s, id, back, err)
		}
		if cv := id.CodeView(); len(cv) != 25+len(id.Name) || string(cv[:4]) != "RSDS" {
			t.Fatalf("%q: CodeView % x", s, cv)
		}
	})
}
