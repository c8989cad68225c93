package hugeheap

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAdviseMarksTheHeap checks in the kernel's own account of the
// process's mappings (smaps: the mapping that holds the range advised,
// and its VmFlags "hg") that the range was advised, and that it lies in
// the Go heap's address space (a range the runtime allocated from, so rw
// and anonymous). The mapping may be larger than the range: one advised
// before (go test -count=2) is merged with it.
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
	var holder string
	for _, line := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			a, b, _ := strings.Cut(f[0], "-")
			mlo, err1 := strconv.ParseUint(a, 16, 64)
			mhi, err2 := strconv.ParseUint(b, 16, 64)
			holder = ""
			if err1 == nil && err2 == nil && uint64(lo) >= mlo && uint64(hi) <= mhi {
				if f[1] != "rw-p" {
					t.Fatalf("mapping %s holding the range is %s, want rw-p", f[0], f[1])
				}
				holder = f[0]
			}
			continue
		}
		if holder != "" && strings.HasPrefix(line, "VmFlags:") {
			for _, fl := range f[1:] {
				if fl == "hg" {
					return
				}
			}
			t.Fatalf("mapping %s: %s, no hg", holder, line)
		}
	}
	t.Fatalf("no mapping holds %#x-%#x in smaps", lo, hi)
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
