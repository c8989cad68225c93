package unwind

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
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
	dir := t.TempDir()
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
