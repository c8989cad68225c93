package pdb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/symbolize/peid"
)

// build compiles testdata/modules.c for target (x86_64 or i686) into
// an executable and its PDB, and returns both paths.
func build(t *testing.T, arch string) (exe, pdb string) {
	t.Helper()
	clang, lld := testenv.Tool(t, "clang"), testenv.Tool(t, "lld-link")
	dir := t.TempDir()
	obj := filepath.Join(dir, "modules.obj")
	exe, pdb = filepath.Join(dir, "modules.exe"), filepath.Join(dir, "modules.pdb")
	run := func(name string, args ...string) {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, out)
		}
	}
	run(clang, "--target="+arch+"-pc-windows-msvc", "-O1", "-g", "-gcodeview", "-c", "testdata/modules.c", "-o", obj)
	machine := "/machine:x64"
	if arch == "i686" {
		machine = "/machine:x86"
	}
	run(lld, "/entry:mainCRTStartup", "/subsystem:console", "/nodefaultlib", "/debug", machine,
		"/pdb:"+pdb, "/out:"+exe, obj)
	return exe, pdb
}

func parseFile(t *testing.T, path string) *File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// pdbutilPublics reads the public symbols' RVAs with llvm-pdbutil, an
// independent reader (LLVM's), as section:offset plus the section's
// virtual address.
func pdbutilPublics(t *testing.T, pdb string) map[string]uint32 {
	t.Helper()
	pu := testenv.Tool(t, "llvm-pdbutil")
	out, err := exec.Command(pu, "dump", "-publics", "-section-headers", pdb).CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-pdbutil: %v\n%s", err, out)
	}
	var vas []uint32
	for _, m := range regexp.MustCompile(`(?m)^\s+([0-9A-F]+) virtual address$`).FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseUint(string(m[1]), 16, 32)
		vas = append(vas, uint32(v))
	}
	syms := map[string]uint32{}
	re := regexp.MustCompile("S_PUB32 \\[size = \\d+\\] `([^`]+)`\\s+flags = [^,]*, addr = (\\d+):(\\d+)")
	for _, m := range re.FindAllSubmatch(out, -1) {
		seg, _ := strconv.Atoi(string(m[2]))
		off, _ := strconv.ParseUint(string(m[3]), 10, 32)
		if seg < 1 || seg > len(vas) {
			t.Fatalf("llvm-pdbutil: %s in section %d of %d", m[1], seg, len(vas))
		}
		syms[string(m[1])] = vas[seg-1] + uint32(off)
	}
	return syms
}

// TestPublics: the PDB of a program lld-link built names its functions
// at the RVAs LLVM's own reader gives, its identity is the one the
// executable's CodeView record names, and the entry point's RVA looks up
// as mainCRTStartup.
func TestPublics(t *testing.T) {
	for _, arch := range []string{"x86_64", "i686"} {
		t.Run(arch, func(t *testing.T) {
			exe, pdbPath := build(t, arch)
			f := parseFile(t, pdbPath)
			want := pdbutilPublics(t, pdbPath)
			prefix := ""
			if arch == "i686" {
				prefix = "_" // the x86 C decoration
			}
			for _, name := range []string{"inner_fn", "outer_fn", "mainCRTStartup", "message"} {
				if _, ok := want[prefix+name]; !ok {
					t.Fatalf("llvm-pdbutil lists no %s: %v", prefix+name, want)
				}
			}
			got := map[string]uint32{}
			for _, s := range f.Publics {
				got[s.Name] = s.RVA
			}
			for name, rva := range want {
				if got[name] != rva {
					t.Errorf("%s at RVA %#x, llvm-pdbutil says %#x", name, got[name], rva)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d publics, llvm-pdbutil lists %d", len(got), len(want))
			}
			// Inside a function: named with the offset.
			s, off, ok := f.Lookup(want[prefix+"outer_fn"] + 3)
			if !ok || s.Name != prefix+"outer_fn" || off != 3 || !s.Function {
				t.Errorf("lookup outer_fn+3: %+v +%d %v", s, off, ok)
			}
			if s, _, ok := f.Lookup(want[prefix+"message"]); !ok || s.Function {
				t.Errorf("lookup message: %+v %v, want a data symbol", s, ok)
			}
			// Before the first symbol of .text, or in no section: unnamed.
			if s, _, ok := f.Lookup(0x10); ok {
				t.Errorf("RVA 0x10 (headers) named %s", s.Name)
			}

			b, err := os.ReadFile(exe)
			if err != nil {
				t.Fatal(err)
			}
			id, err := peid.Read(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if !id.HasPDB || id.PDBGUID != f.GUID || id.PDBAge != f.Age || filepath.Base(id.PDBName) != "modules.pdb" {
				t.Errorf("image names PDB %s %s age %d, the PDB is %s age %d", id.PDBName, GUIDString(id.PDBGUID), id.PDBAge, GUIDString(f.GUID), f.Age)
			}
			if id.SizeOfImage == 0 || id.TimeDateStamp == 0 {
				t.Errorf("identity %+v: no size or time stamp", id)
			}
		})
	}
}

// TestSymStoreKey: the symbol-store directory of a GUID and age.
func TestSymStoreKey(t *testing.T) {
	g := [16]byte{0xbd, 0x74, 0xbf, 0x54, 0x22, 0xf9, 0x30, 0x57, 0x4c, 0x4c, 0x44, 0x20, 0x50, 0x44, 0x42, 0x2e}
	if got, want := SymStoreKey(g, 1), "54BF74BDF92257304C4C44205044422E1"; got != want {
		t.Errorf("SymStoreKey = %s, want %s", got, want)
	}
	if got, want := GUIDString(g), "{54BF74BD-F922-5730-4C4C-44205044422E}"; got != want {
		t.Errorf("GUIDString = %s, want %s", got, want)
	}
	if got := SymStoreKey(g, 0x1a); got[len(got)-2:] != "1A" {
		t.Errorf("age 0x1a: %s", got)
	}
}

// TestDamaged: truncations and corruptions of a real PDB give errors (or
// a result whose every symbol lies in a section), never a panic.
func TestDamaged(t *testing.T) {
	b, err := os.ReadFile("testdata/modules.pdb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatalf("the fixture does not parse: %v", err)
	}
	for _, n := range []int{0, 31, 56, 4096, len(b) / 2, len(b) - 1} {
		if _, err := Parse(bytes.NewReader(b[:n]), int64(n)); err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
	for off := 32; off < 64; off++ {
		c := bytes.Clone(b)
		c[off] ^= 0xff
		checkParse(t, c)
	}
}

// checkParse parses data and checks what a successful parse returns.
func checkParse(t *testing.T, data []byte) {
	f, err := Parse(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return
	}
	for i, s := range f.Publics {
		if i > 0 && s.RVA < f.Publics[i-1].RVA {
			t.Fatalf("publics out of order at %d", i)
		}
	}
	for _, rva := range []uint32{0, 0x1000, 0x1010, 0xffffffff} {
		if s, off, ok := f.Lookup(rva); ok && (s.RVA+off != rva || f.sectionOf(s.RVA) != f.sectionOf(rva)) {
			t.Fatalf("lookup %#x: %+v+%d", rva, s, off)
		}
	}
}

func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("testdata/modules.pdb"); err == nil {
		f.Add(b)
	}
	f.Add(append(bytes.Clone(msfMagic), make([]byte, 64)...))
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, data) })
}

// TestOMAP: addresses of code rearranged after linking map through the
// OMAP table; code it removed (target 0) and addresses before its first
// entry are not named.
func TestOMAP(t *testing.T) {
	tab := []omapEntry{{0x1000, 0x5000}, {0x1100, 0}, {0x1200, 0x2000}}
	for _, c := range []struct {
		in, out uint32
		ok      bool
	}{{0x0fff, 0, false}, {0x1000, 0x5000, true}, {0x1010, 0x5010, true}, {0x1100, 0, false}, {0x11ff, 0, false}, {0x1204, 0x2004, true}} {
		got, ok := mapOMAP(tab, c.in)
		if got != c.out || ok != c.ok {
			t.Errorf("map %#x = %#x %v, want %#x %v", c.in, got, ok, c.out, c.ok)
		}
	}
	if _, err := parseOMAP([]byte{0x10, 0, 0, 0, 0, 0, 0, 0, 0x08, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("an OMAP table out of order parsed")
	}
}

// TestDamageNamesNoOtherSymbol flips bits at every byte of the fixture
// whose identity stays intact (a store would still match it) and looks
// up every public symbol's address: a damaged file either fails to parse
// or names each address as the undamaged file does. PDBs carry no
// checksum, so two kinds of damage cannot be told from a good file and
// are allowed, counted apart: a symbol's offset changed within its
// neighbours' range (the address map's order still holds), and the
// bytes of a symbol's name. Names are not checked against the hash
// table's buckets: lld's buckets do not all agree with Microsoft's
// name hash (this fixture's outer_fn), and a good PDB must not be
// refused.
func TestDamageNamesNoOtherSymbol(t *testing.T) {
	b, err := os.ReadFile("testdata/modules.pdb")
	if err != nil {
		t.Fatal(err)
	}
	good, err := Parse(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range good.Publics {
		names[s.Name] = true
	}
	var parsed, failed, moved, garbled, none int
	for off := range b {
		for _, mask := range []byte{1 << (off % 8), 0xff} {
			c := bytes.Clone(b)
			c[off] ^= mask
			f, err := Parse(bytes.NewReader(c), int64(len(c)))
			if err != nil {
				failed++
				continue
			}
			if f.GUID != good.GUID || f.Age != good.Age {
				continue // another identity: never matched to the module
			}
			parsed++
			at := map[uint32]string{}
			rva := map[string]uint32{}
			for _, s := range f.Publics {
				at[s.RVA], rva[s.Name] = s.Name, s.RVA
			}
			for _, s := range good.Publics {
				got, _, ok := f.Lookup(s.RVA)
				switch {
				case !ok:
					none++
				case got.Name == s.Name:
				case names[got.Name] && rva[s.Name] != s.RVA && rva[s.Name] > rva[got.Name]:
					// s moved up, still after its neighbour: its
					// record's offset field was hit.
					moved++
				case !names[got.Name] && at[s.RVA] == got.Name:
					// s's own record, its name's bytes hit.
					garbled++
				default:
					t.Errorf("byte %#x ^ %#x: %#x named %q, not %s", off, mask, s.RVA, got.Name, s.Name)
				}
			}
		}
	}
	t.Logf("%d damaged files parsed, %d refused; lookups naming a symbol moved in its record %d, a name damaged in its record %d, none %d", parsed, failed, moved, garbled, none)
	if failed == 0 || moved > 8 {
		t.Errorf("%d damaged files refused, %d symbols moved: the cross-checks are not working", failed, moved)
	}
}
