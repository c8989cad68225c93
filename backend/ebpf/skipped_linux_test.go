package ebpf

import (
	"os"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// TestSkipMeaningCoversEveryProgram: every program of the BPF object has
// its skipped runs described (what a miss means for the trace, and how it
// is counted); a program added without one fails here.
func TestSkipMeaningCoversEveryProgram(t *testing.T) {
	spec, err := loadIotrace()
	if err != nil {
		t.Fatal(err)
	}
	for name := range spec.Programs {
		if _, ok := skipMeaning[name]; !ok {
			t.Errorf("program %s: no entry in skipMeaning (counters.go) nor in docs/linux.md's loss table", name)
		}
	}
	for name := range skipMeaning {
		if _, ok := spec.Programs[name]; !ok {
			t.Errorf("skipMeaning describes %s, which the object does not have", name)
		}
	}
}

// TestSkippedRunsRead: the skipped runs of every program of the loaded
// object are read from the kernel (BPF_OBJ_GET_INFO_BY_FD), attached ones
// included, while they run.
func TestSkippedRunsRead(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	all := attachConfig{file: true, uring: true, iowait: true}
	pr, err := loadProbes(loadConfig{selfTgid: uint32(os.Getpid()), ringSize: 1 << 20, wakeupBytes: 1 << 18, cause: true, attach: all})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.close()
	if err := pr.attach(all); err != nil {
		t.Fatal(err)
	}
	os.ReadFile("/proc/self/stat")
	sk, err := pr.skipped()
	if err != nil {
		t.Fatal(err)
	}
	for name := range skipMeaning {
		if _, ok := sk[name]; !ok {
			t.Errorf("no skipped-runs count read for %s", name)
		}
	}
	t.Logf("skipped runs: %v", sk)
}
