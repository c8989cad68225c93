package hugeheap

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestAdviseMarksTheHeap checks in the kernel's own account of the
// process's mappings (smaps' VmFlags "hg") that the heap mapping was
// advised, where the policy lets a process ask.
func TestAdviseMarksTheHeap(t *testing.T) {
	r, err := Advise(32 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != ModeMadvise {
		if r.Hi != 0 || r.Why == "" {
			t.Fatalf("policy %q: %+v, want nothing advised and why", r.Mode, r)
		}
		t.Skipf("policy %q: %s", r.Mode, r)
	}
	if r.Hi-r.Lo < 32<<20 {
		t.Fatalf("advised %#x-%#x, smaller than the block", r.Lo, r.Hi)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("%x-", r.Lo)
	for _, m := range strings.Split(string(smaps), "\n") {
		if !strings.HasPrefix(m, head) {
			continue
		}
		rest := string(smaps)[strings.Index(string(smaps), m):]
		i := strings.Index(rest, "VmFlags:")
		if i < 0 {
			t.Fatal("smaps has no VmFlags")
		}
		flags := strings.Fields(strings.SplitN(rest[i:], "\n", 2)[0])
		for _, f := range flags {
			if f == "hg" {
				return
			}
		}
		t.Fatalf("mapping %s: VmFlags %v, no hg", m, flags)
	}
	t.Fatalf("no mapping starts at %#x in smaps", r.Lo)
}
