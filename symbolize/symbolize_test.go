package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// build compiles src with the compiler and flags given into dir/name.
func build(t *testing.T, dir, name, compiler string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(compiler); err != nil {
		t.Skipf("skipped: %s not found (scripts/setup installs it)", compiler)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(compiler, append(args, "-o", out)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", compiler, err, b)
	}
	return out
}

func buildProg(t *testing.T, dir, name string, variant int) string {
	t.Helper()
	src, _ := filepath.Abs(filepath.Join("testdata", "prog.c"))
	return build(t, dir, name, "gcc", "-g", "-O1", "-fno-omit-frame-pointer", "-DVARIANT="+strconv.Itoa(variant), src)
}

// mapped returns the Module a loader would record for path mapped at base
// (its first PT_LOAD at file offset 0), and the address where vaddr lands.
func mapped(t *testing.T, path string, base uint64) (*Module, func(vaddr uint64) uint64) {
	t.Helper()
	id, err := ReadID(path)
	if err != nil || id == "" {
		t.Fatalf("identity of %s: %q, %v", path, id, err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	var first *elf.Prog
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			first = p
			break
		}
	}
	// Vaddr is what a recorder notes (VaddrKnown stays for the test to
	// set): the virtual address mapped at base.
	return &Module{Path: path, ID: id, Start: base, End: base + 1<<24, Vaddr: first.Vaddr - first.Off},
		func(vaddr uint64) uint64 { return base + vaddr - first.Vaddr + first.Off }
}

// oracle asks nm and addr2line where a function is and which line an
// address has.
func oracle(t *testing.T, bin, fn string) (vaddr uint64, line string) {
	t.Helper()
	out, err := exec.Command("nm", bin).Output()
	if err != nil {
		t.Skipf("skipped: nm: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[2] == fn {
			vaddr, _ = strconv.ParseUint(f[0], 16, 64)
		}
	}
	if vaddr == 0 {
		t.Fatalf("nm: no %s in %s", fn, bin)
	}
	a2l, err := exec.Command("addr2line", "-e", bin, "0x"+strconv.FormatUint(vaddr+4, 16)).Output()
	if err != nil {
		t.Skipf("skipped: addr2line: %v", err)
	}
	return vaddr, strings.TrimSpace(string(a2l))
}

func TestSymbolizeELF(t *testing.T) {
	dir := testenv.TempDir(t)
	bin := buildProg(t, dir, "prog", 1)
	m, at := mapped(t, bin, 0x555555554000)
	for _, fn := range []string{"main", "outer_fn", "inner_fn", "write_block"} {
		vaddr, line := oracle(t, bin, fn)
		s := New(Options{DebugDirs: []string{}})
		f := s.Symbolize(m, at(vaddr+4))
		if f.Function != fn || f.Reason != Resolved {
			t.Errorf("%s: named %q (%v)", fn, f.Function, f.Reason)
		}
		// addr2line says "/path/prog.c:17" (perhaps with a discriminator).
		wantFile, wantLine, _ := strings.Cut(strings.Fields(line)[0], ":")
		if filepath.Base(f.File) != filepath.Base(wantFile) || strconv.Itoa(f.Line) != wantLine {
			t.Errorf("%s: at %s:%d, addr2line says %s", fn, f.File, f.Line, line)
		}
	}

	// From a --symbols directory in debuginfod's layout, with the
	// binary gone from its path.
	syms := testenv.TempDir(t)
	id := strings.TrimPrefix(m.ID, "gnu:")
	if err := os.MkdirAll(filepath.Join(syms, id), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bin, filepath.Join(syms, id, "debuginfo")); err != nil {
		t.Fatal(err)
	}
	vaddr, _ := oracle(t, filepath.Join(syms, id, "debuginfo"), "inner_fn")
	s := New(Options{Dirs: []string{syms}, DebugDirs: []string{}})
	if f := s.Symbolize(m, at(vaddr+1)); f.Function != "inner_fn" {
		t.Errorf("from the symbols directory: %q (%v)", f.Function, f.Reason)
	}
	// Nowhere to be found: module+offset, counted.
	s = New(Options{DebugDirs: []string{}})
	f := s.Symbolize(m, at(vaddr+1))
	if f.Function != "" || f.Reason != NoFile || !strings.HasPrefix(f.String(), "prog+0x") {
		t.Errorf("without the file: %q %v %s", f.Function, f.Reason, f)
	}

	// A rebuilt binary (another build-id) at the original path: never
	// used, and the mismatch is counted.
	buildProg(t, dir, "prog", 2)
	f = s.Symbolize(m, at(vaddr+1))
	s = New(Options{DebugDirs: []string{}})
	f = s.Symbolize(m, at(vaddr+1))
	if f.Function != "" || f.Reason != IDMismatch || s.Counts()[IDMismatch] != 1 {
		t.Errorf("rebuilt binary: named %q, %v, counts %v", f.Function, f.Reason, s.Counts())
	}
	if p := s.Problems(); len(p) != 1 || !strings.Contains(p[0], "another identity") {
		t.Errorf("problems %q", p)
	}
}

func TestSymbolizeSeparateDebugFile(t *testing.T) {
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("skipped: objcopy not found")
	}
	dir := testenv.TempDir(t)
	bin := buildProg(t, dir, "prog", 3)
	vaddr, _ := oracle(t, bin, "outer_fn")
	m, at := mapped(t, bin, 0x400000)
	id := strings.TrimPrefix(m.ID, "gnu:")
	debugDir := filepath.Join(dir, "debug")
	dbg := filepath.Join(debugDir, ".build-id", id[:2], id[2:]+".debug")
	os.MkdirAll(filepath.Dir(dbg), 0o755)
	if b, err := exec.Command("objcopy", "--only-keep-debug", bin, dbg).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v %s", err, b)
	}
	if b, err := exec.Command("strip", "--strip-all", bin).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v %s", err, b)
	}
	// The stripped binary alone: it matches but has no symbols.
	s := New(Options{DebugDirs: []string{}})
	if f := s.Symbolize(m, at(vaddr+2)); f.Reason != NoSymbols {
		t.Errorf("stripped: %q %v", f.Function, f.Reason)
	}
	// With the debug directory (as /usr/lib/debug is) but a module
	// recorded without its virtual address: not guessed.
	s = New(Options{DebugDirs: []string{debugDir}})
	if f := s.Symbolize(m, at(vaddr+2)); f.Function != "" || f.Reason != NoLayout {
		t.Errorf("separate debug file, no layout: %q (%v)", f.Function, f.Reason)
	}
	// Recorded with the virtual address mapped at its start: named.
	m.VaddrKnown = true
	s = New(Options{DebugDirs: []string{debugDir}})
	if f := s.Symbolize(m, at(vaddr+2)); f.Function != "outer_fn" || f.Line == 0 {
		t.Errorf("separate debug file: %q line %d (%v)", f.Function, f.Line, f.Reason)
	}
}

func TestSymbolizeCPlusPlus(t *testing.T) {
	dir := testenv.TempDir(t)
	src, _ := filepath.Abs(filepath.Join("testdata", "ns.cc"))
	bin := build(t, dir, "ns", "g++", "-g", "-O1", src)
	vaddr, _ := oracle(t, bin, "_ZN5store11flush_pagesEi")
	m, at := mapped(t, bin, 0x10000)
	f := New(Options{DebugDirs: []string{}}).Symbolize(m, at(vaddr))
	if f.Function != "store::flush_pages(int)" {
		t.Errorf("C++: %q", f.Function)
	}
}

//go:noinline
func knownGoFunction() int { return 42 }

// TestSymbolizeGo names a function of this test binary through its Go
// symbol table, as it is mapped now.
func TestSymbolizeGo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("skipped: reads /proc/self/maps")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pc := uint64(reflect.ValueOf(knownGoFunction).Pointer())
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	var m *Module
	for _, l := range strings.Split(string(maps), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		if pc >= start && pc < end {
			m = &Module{Path: f[5], Start: start, End: end, Offset: off}
		}
	}
	if m == nil {
		t.Fatal("no mapping holds the function")
	}
	if m.ID, err = ReadID(self); err != nil || m.ID == "" {
		t.Fatalf("identity of the test binary: %q %v", m.ID, err)
	}
	f := New(Options{DebugDirs: []string{}}).Symbolize(m, pc+1)
	if !strings.HasSuffix(f.Function, ".knownGoFunction") || !strings.HasSuffix(f.File, "symbolize_test.go") {
		t.Errorf("Go: %q at %s:%d (%v)", f.Function, f.File, f.Line, f.Reason)
	}
}

func TestNoModuleNoID(t *testing.T) {
	s := New(Options{})
	if f := s.Symbolize(nil, 0x1234); f.Reason != NoModule || f.String() != "0x1234" {
		t.Errorf("no module: %v %s", f.Reason, f)
	}
	m := &Module{Path: "/lib/libx.so", Start: 0x1000, End: 0x2000, Offset: 0x3000}
	if f := s.Symbolize(m, 0x1010); f.Reason != NoID || f.String() != "libx.so+0x3010" {
		t.Errorf("no identity: %v %s", f.Reason, f)
	}
	if f := s.Symbolize(m, 0x2000); f.Reason != NoModule {
		t.Errorf("past the mapping: %v", f.Reason)
	}
}

func TestReadIDObject(t *testing.T) {
	// An object file without a build-id note: no identity, no error.
	id, err := ReadID(filepath.Join("testdata", "tiny.o"))
	if err != nil || id != "" {
		t.Errorf("tiny.o: %q %v", id, err)
	}
	if _, err := ReadID(filepath.Join("testdata", "prog.c")); err == nil {
		t.Error("a C source read as ELF")
	}
}

func TestKallsyms(t *testing.T) {
	k, err := ParseKallsyms(strings.NewReader(`ffffffff81000000 T _stext
ffffffff81001000 t do_one_initcall
ffffffff81002000 D some_data
ffffffff81003000 T submit_bio
ffffffffc0001000 t ext4_readahead	[ext4]
`))
	if err != nil || k.Len() != 4 {
		t.Fatalf("%v, %d symbols", err, k.Len())
	}
	for addr, want := range map[uint64]string{0xffffffff81003010: "submit_bio", 0xffffffff81002010: "do_one_initcall", 0xffffffffc0001001: "ext4_readahead"} {
		if f := k.Symbolize(addr); f.Function != want {
			t.Errorf("%#x: %q, want %q", addr, f.Function, want)
		}
	}
	if f := k.Symbolize(0xffffffffc0001001); f.Module != "ext4" || f.Offset != 1 {
		t.Errorf("module symbol: %+v", f)
	}
	if f := k.Symbolize(0x10); f.Reason != NoSymbol {
		t.Errorf("below every symbol: %+v", f)
	}
	if _, err := ParseKallsyms(strings.NewReader("0000000000000000 T _stext\n0000000000000000 T x\n")); err != ErrHiddenKernelAddresses {
		t.Errorf("hidden addresses: %v", err)
	}
	if _, err := ParseKallsyms(strings.NewReader("zz T x\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad address: %v", err)
	}
	if f, err := os.Open("/proc/kallsyms"); err == nil {
		defer f.Close()
		if k, err := ParseKallsyms(f); err == nil && k.Len() < 1000 {
			t.Errorf("this machine's kallsyms: %d text symbols", k.Len())
		}
	}
}

// FuzzParseFile: a damaged or hostile ELF file gives an error or a file
// whose lookups answer something, never a panic.
func FuzzParseFile(f *testing.F) {
	tiny, err := os.ReadFile(filepath.Join("testdata", "tiny.o"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tiny)
	f.Add(tiny[:64])
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := parseFile(&budgetReader{r: bytes.NewReader(data), left: 2*int64(len(data)) + budgetSlack})
		if err != nil {
			return
		}
		for _, a := range []uint64{0, 0x10, 0x1000, ^uint64(0)} {
			if v, ok := sf.vaddr(a); ok {
				sf.lookup(v)
			}
			sf.lookup(a)
		}
		readID(bytes.NewReader(data))
	})
}

// FuzzFindNote: note parsing never reads past its data.
func FuzzFindNote(f *testing.F) {
	f.Add([]byte("\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00abcdefghijklmnopqrst"))
	f.Fuzz(func(t *testing.T, data []byte) {
		findNote(data, binaryLE, "GNU", 3)
	})
}

var binaryLE = binary.LittleEndian
