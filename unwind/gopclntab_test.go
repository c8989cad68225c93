package unwind

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// buildGo builds a small Go program with extra go build flags.
func buildGo(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"os\"\n\nfunc main() { os.WriteFile(os.Args[0]+\".out\", []byte(\"hi\"), 0o600) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(args, src)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "CGO_ENABLED=0", "GOARCH=amd64", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func buildTable(t *testing.T, path string) (*Table, *elf.File) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tab, err := Build(f)
	if err != nil {
		t.Fatal(err)
	}
	return tab, f
}

// TestGoTableMatchesDebugFrame: a Go program's table, from its function
// table (pclntab), gives the CFA the linker's .debug_frame gives at every
// row of every FDE (the runtime's top frames and stack switchers
// excepted: they end walks); built without DWARF (-s -w), the program has
// the same table.
func TestGoTableMatchesDebugFrame(t *testing.T) {
	testenv.SkipUnderWine(t, "builds a Go program: no Go toolchain in the wine prefix")
	dir := testenv.TempDir(t)
	tab, f := buildTable(t, buildGo(t, dir, "withdwarf"))
	if tab.Kind != KindCFI || len(tab.Rows) == 0 {
		t.Fatalf("table kind %v, %d rows", tab.Kind, len(tab.Rows))
	}
	s := f.Section(".debug_frame")
	if s == nil {
		t.Fatal("no .debug_frame to compare with")
	}
	b, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	sec := &cfiSection{data: b}
	fdes, bad, err := sec.entries()
	if err != nil || bad != 0 || len(fdes) == 0 {
		t.Fatalf(".debug_frame: %d FDEs, %d bad, %v", len(fdes), bad, err)
	}
	code := execSegments(f)
	var checked, ended int
	for i := range fdes {
		fd := &fdes[i]
		err := sec.program(fd, AMD64, func(addr uint64, want Rule) {
			if addr >= fd.end {
				return
			}
			off, _, ok := fileOffsets(code, addr, addr+1)
			if !ok {
				t.Errorf("%#x: outside the code", addr)
				return
			}
			got := tab.Lookup(off)
			switch {
			case got.CFA == CFAStop || got.CFA == CFASwitch:
				ended++
			case got.CFA != want.CFA || got.CFAOff != want.CFAOff || got.RA != want.RA || got.RAOff != want.RAOff:
				t.Errorf("%#x: %v, .debug_frame says %v", addr, got, want)
			}
			checked++
		})
		if err != nil {
			t.Fatalf("FDE at %#x: %v", fd.at, err)
		}
	}
	if checked == 0 || ended > checked/50 {
		t.Errorf("%d rows checked, %d in functions that end walks", checked, ended)
	}
	stripped, _ := buildTable(t, buildGo(t, dir, "stripped", "-ldflags=-s -w"))
	if !reflect.DeepEqual(stripped.Rows, tab.Rows) {
		t.Errorf("the stripped program's table differs: %d rows, want %d", len(stripped.Rows), len(tab.Rows))
	}
	t.Logf("%d rows checked against .debug_frame, %d in top frames and stack switchers; %d table rows", checked, ended, len(tab.Rows))
}

// pclntab builds a Go 1.20 function table of two functions at text+0 and
// text+0x40: the first with a frame of 0 then 24 bytes, the second flagged
// as a top frame.
func pclntab() []byte {
	le := binary.LittleEndian
	b := make([]byte, 72)
	le.PutUint32(b, go120Magic)
	b[6], b[7] = 1, 8                    // minLC, ptrSize
	le.PutUint64(b[8:], 2)               // nfunc
	pcsp := []byte{2, 4, 48, 60, 0}      // value 0 for 4 bytes, then 24 for 60
	pctab := uint64(len(b))              // the pcsp table right after the header
	b = append(b, 0)                     // pctab[0]: no table
	b = append(b, pcsp...)               // at pctab+1
	le.PutUint64(b[56:], pctab)          // pctabOffset
	le.PutUint64(b[64:], uint64(len(b))) // pclnOffset
	table := make([]byte, 3*8)
	funcAt := uint32(len(table))
	le.PutUint32(table[0:], 0)
	le.PutUint32(table[4:], funcAt)
	le.PutUint32(table[8:], 0x40)
	le.PutUint32(table[12:], funcAt+44)
	le.PutUint32(table[16:], 0x80) // the end
	f1 := make([]byte, 44)
	le.PutUint32(f1[16:], 1) // pcsp at pctab+1
	f2 := make([]byte, 44)
	f2[41] = funcFlagTopFrame
	table = append(append(table, f1...), f2...)
	return append(b, table...)
}

// TestPclntab: a function's pcsp table gives its CFA at each offset; a
// top frame is a stop.
func TestPclntab(t *testing.T) {
	funcs, minLC, err := parsePclntab(pclntab(), 0x1000)
	if err != nil || len(funcs) != 2 {
		t.Fatalf("%d functions, %v", len(funcs), err)
	}
	spans := goSpans(funcs, minLC, []segment{{vaddr: 0x1000, off: 0, size: 0x100}})
	rows, _ := assemble(spans)
	tab := Table{Rows: rows}
	for _, c := range []struct {
		off  uint64
		want string
	}{{0, "sp+8 fp=u ra=c-8"}, {3, "sp+8 fp=u ra=c-8"}, {4, "sp+32 fp=u ra=c-8"}, {0x3f, "sp+32 fp=u ra=c-8"}, {0x40, "stop fp=s ra=s"}, {0x80, "none"}} {
		if got := tab.Lookup(c.off).String(); got != c.want {
			t.Errorf("at %#x: %s, want %s", c.off, got, c.want)
		}
	}
}

// FuzzPclntab reads arbitrary bytes as a Go function table: no panic, and
// the rows of what is read are in order.
func FuzzPclntab(f *testing.F) {
	f.Add(pclntab())
	f.Fuzz(func(t *testing.T, b []byte) {
		funcs, minLC, err := parsePclntab(b, 0x1000)
		if err != nil {
			return
		}
		rows, _ := assemble(goSpans(funcs, minLC, []segment{{vaddr: 0x1000, off: 0, size: 1 << 32}}))
		for i := 1; i < len(rows); i++ {
			if rows[i].Off <= rows[i-1].Off {
				t.Fatalf("row %d out of order", i)
			}
		}
	})
}
