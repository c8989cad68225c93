package etw

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

const fixtureKernelProcess = "tx_win7_kernel-process_manifest.etl"

// TestKernelProcessFixture reads the Windows 7 Microsoft-Windows-Kernel-
// Process trace: its process, thread and image events become facts.
func TestKernelProcessFixture(t *testing.T) {
	var out sink
	if err := ReadFile(context.Background(), filepath.Join(testenv.ETLDir(t), fixtureKernelProcess), Options{}, &out); err != nil {
		t.Fatal(err)
	}
	procs := map[uint32]event.Fact{} // last non-end fact per pid
	var ends, threads, threadEnds int
	for _, f := range out.facts {
		switch f.Kind {
		case event.FactProcess:
			if f.End {
				ends++
			} else {
				procs[f.Pid] = f
			}
		case event.FactThread:
			threads++
			if f.End {
				threadEnds++
			}
		}
	}
	// 4 ProcessStart and 4 ProcessStop events: 4 processes started in the
	// trace and 2 that started before it, named by their stop.
	if len(procs) != 6 || ends != 4 {
		t.Errorf("%d processes, %d ends; want 6, 4: %+v", len(procs), ends, procs)
	}
	const devenv = `\Device\HarddiskVolume2\Program Files (x86)\Microsoft Visual Studio 10.0\Common7\IDE\devenv.exe`
	for pid, want := range map[uint32]struct{ name, image string }{
		5864: {"devenv", devenv},
		2880: {"OUTLOOK", `\Device\HarddiskVolume2\Program Files (x86)\Microsoft Office\Office14\OUTLOOK.EXE`},
		700:  {"SearchProtocolHost", `\Device\HarddiskVolume2\Windows\SysWOW64\SearchProtocolHost.exe`},
		5380: {"SearchProtocol", ""}, // started before the trace: the 14-character name of its stop
	} {
		f := procs[pid]
		if f.Name != want.name || f.Image != want.image {
			t.Errorf("pid %d: name %q image %q, want %q %q", pid, f.Name, f.Image, want.name, want.image)
		}
	}
	if f := procs[5864]; f.PPid != 3324 || f.ProcStart <= 0 {
		t.Errorf("devenv: %+v", f)
	}
	// 287 ThreadStart and 264 ThreadStop events.
	if threads != 287+264 || threadEnds != 264 {
		t.Errorf("%d thread facts (%d ends), want 551 (264)", threads, threadEnds)
	}
	st := &out.trailer.Stats
	// The trace has no volume mapping: the images stay in NT form, and
	// the summary says so.
	if st.Get(event.CountInfo, StatNTPath) != 4 || st.Get(event.CountInfo, StatProcessImages) != 4 {
		t.Errorf("stats: %+v", st.Sorted())
	}
	for _, c := range st.Counters {
		if strings.HasPrefix(c.Name, "etw: records not decoded") && strings.Contains(c.Name, "Kernel-Process") {
			t.Errorf("Kernel-Process records left undecoded: %s: %d", c.Name, c.Value)
		}
	}
}

// TestProcessImages: in the PerfView Windows 8 trace every process named
// by a rundown gets its executable from the image rundown, in DOS form;
// the process both the kernel and Kernel-Process providers log is one
// process.
func TestProcessImages(t *testing.T) {
	var out sink
	if err := ReadFile(context.Background(), filepath.Join(testenv.ETLDir(t), fixtureWin8), Options{}, &out); err != nil {
		t.Fatal(err)
	}
	starts := map[uint32]map[int64]bool{}
	images := map[uint32]string{}
	for _, f := range out.facts {
		if f.Kind != event.FactProcess || f.End {
			continue
		}
		if starts[f.Pid] == nil {
			starts[f.Pid] = map[int64]bool{}
		}
		starts[f.Pid][f.ProcStart] = true
		if f.Image != "" {
			images[f.Pid] = f.Image
		}
	}
	for pid, want := range map[uint32]string{
		144:  `C:\Windows\System32\svchost.exe`,
		1632: `C:\Program Files\Windows Defender\MsMpEng.exe`,
		2876: `C:\Windows\explorer.exe`,
	} {
		if images[pid] != want {
			t.Errorf("pid %d image %q, want %q", pid, images[pid], want)
		}
	}
	if n := len(starts[3676]); n != 1 {
		t.Errorf("Test.x64 (pid 3676) is %d processes, want 1: %v", n, starts[3676])
	}
	for _, e := range out.events {
		if e.Pid == 3676 && e.Comm != "Test.x64" {
			t.Fatalf("event of pid 3676 named %q: %+v", e.Comm, e)
		}
	}
	if n := out.trailer.Stats.Get(event.CountInfo, StatProcessImages); n < 30 {
		t.Errorf("%s = %d", StatProcessImages, n)
	}
}

func TestIsMainImage(t *testing.T) {
	for _, c := range []struct {
		name, base string
		want       bool
	}{
		{"svchost", "svchost.exe", true},
		{"OUTLOOK", "OUTLOOK.EXE", true},
		{"SearchProtocol", "SearchProtocolHost.exe", true}, // cut at 14 characters
		{"SearchFilterHo", "SearchFilterHost.exe", true},
		{"Search", "SearchProtocolHost.exe", false},
		{"System", "ntoskrnl.exe", false},
		{"cmd", "cmdkey.exe", false},
		{"", "a.exe", false},
	} {
		if got := isMainImage(c.name, c.base); got != c.want {
			t.Errorf("isMainImage(%q, %q) = %v", c.name, c.base, got)
		}
	}
}
