package hugeheap

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
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

// TestAdviseCollectorOff: with the collector off (GOGC=off) no cycle
// frees the block by itself; Advise still returns, at once, and the block
// is freed (a forced cycle).
func TestAdviseCollectorOff(t *testing.T) {
	prev := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(prev)
	start := time.Now()
	if _, _, err := Advise(32 << 20); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Advise took %v with the collector off", d)
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	if n := live[0].Value.Uint64(); n >= 32<<20 {
		t.Errorf("live heap %d bytes after Advise: the block was not freed", n)
	}
}
