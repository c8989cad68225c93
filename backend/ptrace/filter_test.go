package ptrace

import (
	"slices"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestFilter runs the seccomp program on every call number of both
// architectures: the traced calls (and only they) go to the tracer, so do
// calls of another ABI, and the tree is short.
func TestFilter(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		for _, ops := range [][]event.Op{nil, {event.OpRead}} {
			nrs := TracedCalls(goarch, ops)
			if len(nrs) < 10 {
				t.Fatalf("%s %v: %d traced calls", goarch, ops, len(nrs))
			}
			prog, err := Filter(goarch, nrs)
			if err != nil {
				t.Fatal(err)
			}
			arch := auditArch[goarch]
			for nr := uint32(0); nr < 1024; nr++ {
				got, err := run(prog, nr, arch)
				if err != nil {
					t.Fatal(err)
				}
				want := uint32(retAllow)
				if slices.Contains(nrs, nr) {
					want = retTrace
				}
				if got != want {
					t.Errorf("%s %v: call %d: %#x, want %#x", goarch, ops, nr, got, want)
				}
			}
			if got, _ := run(prog, 3, 0x40000003); got != retTrace {
				t.Errorf("%s: a call of another ABI: %#x, want trace", goarch, got)
			}
			if goarch == "amd64" {
				if got, _ := run(prog, x32Bit|1, arch); got != retTrace {
					t.Errorf("an x32 call: %#x, want trace", got)
				}
			}
			if len(prog) > 4*len(nrs)+8 {
				t.Errorf("%s: %d instructions for %d calls", goarch, len(prog), len(nrs))
			}
		}
	}
	if _, err := Filter("mips", nil); err == nil {
		t.Error("Filter(mips): no error")
	}
}

// TestFilterOps checks that a selection of ops keeps the calls that name
// descriptors (open, close, dup) and leaves the others out.
func TestFilterOps(t *testing.T) {
	all := TracedCalls("amd64", nil)
	reads := TracedCalls("amd64", []event.Op{event.OpRead})
	const openat, close, write, read = 257, 3, 1, 0
	for _, nr := range []uint32{openat, close, read} {
		if !slices.Contains(reads, nr) {
			t.Errorf("call %d left out of --op read", nr)
		}
	}
	if slices.Contains(reads, write) || !slices.Contains(all, write) {
		t.Error("write: traced with --op read, or not without it")
	}
}
