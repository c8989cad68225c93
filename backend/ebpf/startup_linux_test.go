package ebpf

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/iotrace/iotrace/backend/ebpf/internal/rawbtf"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestUnusedProgramsNamed: every program left unloaded is one of the
// object's, and with everything attached none is.
func TestUnusedProgramsNamed(t *testing.T) {
	spec, err := loadIotrace()
	if err != nil {
		t.Fatal(err)
	}
	for name := range unusedPrograms(attachConfig{}) {
		if _, ok := spec.Programs[name]; !ok {
			t.Errorf("unusedPrograms names %s, which the object does not have", name)
		}
	}
	if n := len(unusedPrograms(attachConfig{file: true, uring: true, iowait: true})); n != 0 {
		t.Errorf("%d programs left out with everything attached", n)
	}
	if !asyncWanted(nil) || !asyncWanted([]event.Op{event.OpRead}) || asyncWanted([]event.Op{event.OpOpen}) {
		t.Error("asyncWanted")
	}
}

// TestOnlyAttachedProgramsLoaded: with the file layer alone (no block:
// no waited-for-I/O programs) and no asynchronous requests, those
// programs are not loaded, and what is attached works.
func TestOnlyAttachedProgramsLoaded(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	ac := attachConfig{file: true}
	pr, err := loadProbes(loadConfig{selfTgid: uint32(os.Getpid()), ringSize: 1 << 20, wakeupBytes: 1 << 18, attach: ac})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.close()
	if pr.objs.SchedSwitch != nil || pr.objs.UringSubmit != nil || pr.objs.DioBegin != nil || pr.objs.PcEvict != nil {
		t.Error("programs nothing attaches were loaded")
	}
	if pr.objs.SysEnter == nil || pr.objs.SysExit == nil || pr.objs.DumpInflight == nil {
		t.Fatal("programs that are attached were not loaded")
	}
	if err := pr.attach(ac); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.skipped(); err != nil {
		t.Error(err)
	}
}

// TestVerifierWork loads every program with the verifier's statistics
// and logs each one's verification time and instructions processed (go
// test -run TestVerifierWork -v: the figures of docs/benchmarks.md); a
// program whose verification explodes (past 100,000 instructions
// processed, a tenth of the kernel's limit) fails, as it would make
// start-up slow long before the kernel refused it.
func TestVerifierWork(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	spec, err := loadIotrace()
	if err != nil {
		t.Fatal(err)
	}
	// As a trace of both layers loads them (record's default), for this
	// kernel's tracepoints.
	ks, release, err := rawbtf.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	tp, dio := readTPLayout(ks), hasDio(ks)
	release()
	b2u := map[bool]uint8{false: 0, true: 1}
	for name, v := range map[string]any{"cfg_cause": uint8(1), "cfg_page_shift": uint32(pageShift()),
		"cfg_uring_cqe": b2u[tp.uringCQE], "cfg_evict_page": b2u[tp.evictPage]} {
		if err := spec.Variables[name].Set(v); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range absentPrograms(dio, tp) {
		delete(spec.Programs, name)
	}
	c, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	names := make([]string, 0, len(c.Programs))
	for n := range c.Programs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st, err := parseVerifierStats(c.Programs[n].VerifierLog)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		t.Logf("%-16s verification %6d µs, %6d instructions processed", n, st.micros, st.processed)
		if st.processed > 100_000 {
			t.Errorf("%s: the verifier processed %d instructions, want at most 100,000", n, st.processed)
		}
	}
}

type verifierStats struct{ micros, processed int }

// parseVerifierStats reads "verification time N usec" and "processed N
// insns" from a verifier log at LogLevelStats.
func parseVerifierStats(log string) (verifierStats, error) {
	var st verifierStats
	var okT, okP bool
	for _, line := range strings.Split(log, "\n") {
		if _, err := fmt.Sscanf(line, "verification time %d usec", &st.micros); err == nil {
			okT = true
		}
		if _, err := fmt.Sscanf(line, "processed %d insns", &st.processed); err == nil {
			okP = true
		}
	}
	if !okT || !okP {
		return st, fmt.Errorf("no verifier statistics in its log: %q", log)
	}
	return st, nil
}

// TestInodeIOOnlyWithCause: the map of page-cache reads in flight per
// inode (an LRU map, preallocated: 4-6 ms to create) is made whole only
// when reads are linked to block I/O (both layers traced), one entry
// otherwise.
func TestInodeIOOnlyWithCause(t *testing.T) {
	testenv.RequirePrivileged(t, "creates BPF maps")
	for _, cause := range []bool{false, true} {
		pr, err := createProbes(loadConfig{cause: cause, ringSize: 1 << 20, attach: attachConfig{file: true, iowait: cause}})
		if err != nil {
			t.Fatal(err)
		}
		n := pr.objs.InodeIo.MaxEntries()
		pr.close()
		if want := map[bool]uint32{false: 1, true: 16384}[cause]; n != want {
			t.Errorf("linked to block I/O %v: inode_io has %d entries, want %d", cause, n, want)
		}
	}
}
