// Package stacktest builds what tests of stacks need: a small C program
// with a known call chain (main -> outer_fn -> inner_fn -> write_block),
// compiled with -g and frame pointers, and the module and stack facts a
// recorder would write for it.
package stacktest

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
)

// progSource is symbolize/testdata/prog.c, found from this file.
func progSource(t testing.TB) string {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("stacktest: cannot find its own source")
	}
	return filepath.Join(filepath.Dir(self), "..", "..", "symbolize", "testdata", "prog.c")
}

// BuildProg builds symbolize/testdata/prog.c (main -> outer_fn ->
// inner_fn -> write_block) with -g and frame pointers into dir/prog.
func BuildProg(t testing.TB, dir string, variant int) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("skipped: gcc not found (scripts/setup installs it)")
	}
	out := filepath.Join(dir, "prog")
	b, err := exec.Command("gcc", "-g", "-fno-omit-frame-pointer", "-DVARIANT="+strconv.Itoa(variant), "-o", out, progSource(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// ProgFacts returns the module fact of bin mapped whole at base in
// process pid, and a stack fact (ID 1) whose user frames are return
// addresses inside write_block, inner_fn, outer_fn and main.
func ProgFacts(t testing.TB, bin string, pid uint32, base uint64) (module, stack event.Fact) {
	t.Helper()
	id, err := symbolize.ReadID(bin)
	if err != nil || id == "" {
		t.Fatalf("build-id of %s: %q %v", bin, id, err)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]uint64{}
	for _, s := range syms {
		at[s.Name] = s.Value
	}
	var first *elf.Prog
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			first = p
			break
		}
	}
	module = event.Fact{Kind: event.FactModule, Rundown: true, Pid: pid, Handle: base, Size: 1 << 20, Name: bin, Detail: id}
	stack = event.Fact{Kind: event.FactStack, Handle: 1}
	for _, fn := range []string{"write_block", "inner_fn", "outer_fn", "main"} {
		v, ok := at[fn]
		if !ok {
			t.Fatalf("no %s in %s", fn, bin)
		}
		stack.User = append(stack.User, base+v+5-first.Vaddr+first.Off)
	}
	return module, stack
}
