package hugeheap

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestAdviseMarksTheHeap checks in the kernel's own account of the
// process's mappings (smaps: the mapping that starts at the range advised,
// split off by the advice, and its VmFlags "hg") that the range was
// advised, and that it lies in the Go heap's address space (a range the
// runtime allocated from, so rw and anonymous).
func TestAdviseMarksTheHeap(t *testing.T) {
	lo, hi, err := Advise(32 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if hi-lo < 28<<20 || lo%hugePage != 0 || hi%hugePage != 0 {
		t.Fatalf("advised %#x-%#x: want about 32 MiB in whole 2 MiB pages", lo, hi)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(smaps), fmt.Sprintf("%x-%x rw-p ", lo, hi))
	if i < 0 {
		t.Fatalf("no rw mapping %#x-%#x in smaps", lo, hi)
	}
	rest := string(smaps)[i:]
	j := strings.Index(rest, "VmFlags:")
	if j < 0 {
		t.Fatal("smaps has no VmFlags")
	}
	flags := strings.Fields(strings.SplitN(rest[j:], "\n", 2)[0])
	for _, f := range flags {
		if f == "hg" {
			return
		}
	}
	t.Fatalf("VmFlags %v: no hg", flags)
}

// TestAdviseSmall: a size under one huge page advises nothing.
func TestAdviseSmall(t *testing.T) {
	if lo, hi, err := Advise(hugePage - 1); lo != 0 || hi != 0 || err != nil {
		t.Fatalf("Advise(2 MiB - 1) = %#x, %#x, %v; want nothing", lo, hi, err)
	}
}
