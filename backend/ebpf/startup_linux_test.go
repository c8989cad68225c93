package ebpf

import (
	"os"
	"testing"

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
