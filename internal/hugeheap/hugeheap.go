// Package hugeheap asks Linux to back the start of the Go heap with
// transparent huge pages, where the kernel gives them only to memory that
// asks (the "madvise" mode, Debian's and most distributions' default).
//
// Why: iotrace's start-up grows its heap to tens of MiB within 0.1 s (the
// kernel's BTF, two BPF objects), and each 4 KiB page first touched is a
// page fault. Where faults are dear, in virtual machines whose guest page
// tables are shadowed, a fault cost 18 µs on the machine this was measured
// on: 3,400 faults, about 60 ms of `record -- /bin/true`'s 220 ms. One
// 2 MiB page for 512 of them made it 0.90× (docs/benchmarks.md). The Go
// runtime stopped asking for huge pages itself in Go 1.21.1 (GODEBUG
// disablethp exists only to refuse them where the kernel gives them to
// all memory).
//
// What is advised is bounded: the one mapping of the Go heap that holds a
// block of the size asked, at most a few dozen MiB. Memory the collector
// returns there may come back as huge pages (khugepaged), so the process
// may keep up to that mapping's size resident: a bound, not a leak.
// Written by hand: it is two system calls and a parse of /proc/self/maps.
package hugeheap

import (
	"bytes"
	"fmt"
	"strconv"
)

// Mode is the kernel's transparent huge page policy for anonymous memory.
type Mode string

// The policies of /sys/kernel/mm/transparent_hugepage/enabled.
const (
	ModeAlways  Mode = "always"
	ModeMadvise Mode = "madvise"
	ModeNever   Mode = "never"
)

// Result says what Advise did: the range advised, or why nothing was.
type Result struct {
	Mode   Mode
	Lo, Hi uint64 // the mapping advised; both 0 when none was
	Why    string // when nothing was advised: why not
}

func (r Result) String() string {
	if r.Hi == 0 {
		return "no huge pages asked: " + r.Why
	}
	return fmt.Sprintf("huge pages asked for the heap mapping %#x-%#x (%d MiB; mode %s)", r.Lo, r.Hi, (r.Hi-r.Lo)>>20, r.Mode)
}

// parseMode reads the policy from the enabled file's text, in which the
// one in force is bracketed: "always [madvise] never".
func parseMode(b []byte) (Mode, error) {
	i := bytes.IndexByte(b, '[')
	j := bytes.IndexByte(b, ']')
	if i < 0 || j < i {
		return "", fmt.Errorf("hugeheap: no [policy] in %q", b)
	}
	switch m := Mode(b[i+1 : j]); m {
	case ModeAlways, ModeMadvise, ModeNever:
		return m, nil
	default:
		return "", fmt.Errorf("hugeheap: unknown policy %q", m)
	}
}

// mappingOf returns the range of the mapping of /proc/PID/maps text that
// holds addr.
func mappingOf(maps []byte, addr uint64) (lo, hi uint64, err error) {
	for n := 1; len(maps) > 0; n++ {
		line := maps
		if i := bytes.IndexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		if len(line) == 0 {
			continue
		}
		r, _, _ := bytes.Cut(line, []byte(" "))
		a, b, ok := bytes.Cut(r, []byte("-"))
		if !ok {
			return 0, 0, fmt.Errorf("hugeheap: maps line %d: no range in %q", n, line)
		}
		lo, err1 := strconv.ParseUint(string(a), 16, 64)
		hi, err2 := strconv.ParseUint(string(b), 16, 64)
		if err1 != nil || err2 != nil || hi <= lo {
			return 0, 0, fmt.Errorf("hugeheap: maps line %d: bad range %q", n, r)
		}
		if lo <= addr && addr < hi {
			return lo, hi, nil
		}
	}
	return 0, 0, fmt.Errorf("hugeheap: no mapping holds %#x", addr)
}
