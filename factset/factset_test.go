package factset

import (
	"testing"

	"github.com/iotrace/iotrace/event"
)

func snapshot(t *testing.T, s *Set) []event.Fact {
	t.Helper()
	var out []event.Fact
	if err := s.Snapshot(99, func(f *event.Fact) error { out = append(out, *f); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSet(t *testing.T) {
	s := New()
	for _, f := range []event.Fact{
		{Kind: event.FactDevice, Dev: event.Device{Major: 8}, Name: "sda"},
		{Kind: event.FactProcess, Pid: 10, ProcStart: -5, Name: "sh", Image: "/bin/sh", Detail: "sh -c x", Rundown: true},
		{Kind: event.FactName, Space: event.SpaceFD, Pid: 10, ProcStart: -5, Handle: 3, Name: "/etc/passwd", Time: 1},
		{Kind: event.FactName, Space: event.SpaceFD, Pid: 10, ProcStart: -5, Handle: 4, Name: "/tmp/a", Time: 2},
		{Kind: event.FactName, Space: event.SpaceFD, Pid: 10, ProcStart: -5, Handle: 4, End: true, Time: 3},
		{Kind: event.FactName, Space: event.SpaceFD, Pid: 10, ProcStart: -5, Handle: 3, Name: "/etc/group", Time: 4}, // fd 3 reused
		{Kind: event.FactProcess, Pid: 10, ProcStart: -5, Name: "cat", Time: 5},                                      // exec: image and cmdline kept
		{Kind: event.FactProcess, Pid: 11, ProcStart: 6, Name: "ls", Time: 6},
		{Kind: event.FactName, Space: event.SpaceCwd, Pid: 11, ProcStart: 6, Name: "/home", Time: 6},
		{Kind: event.FactThread, Pid: 11, ProcStart: 6, Tid: 12, Time: 6},
		{Kind: event.FactProcess, Pid: 11, ProcStart: 6, End: true, Time: 7}, // exit drops cwd and threads
	} {
		s.Apply(&f)
	}
	got := snapshot(t, s)
	if len(got) != 3 {
		t.Fatalf("snapshot holds %d facts, want 3: %+v", len(got), got)
	}
	if got[0].Kind != event.FactDevice || got[1].Kind != event.FactProcess || got[2].Kind != event.FactName {
		t.Errorf("order: %v %v %v", got[0].Kind, got[1].Kind, got[2].Kind)
	}
	p := got[1]
	if p.Name != "cat" || p.Image != "/bin/sh" || p.Detail != "sh -c x" || !p.Rundown || p.Time != 99 {
		t.Errorf("process %+v", p)
	}
	if n := got[2]; n.Name != "/etc/group" || n.Handle != 3 || !n.Rundown || n.End {
		t.Errorf("name %+v", n)
	}
	if len(s.byPid) != 1 {
		t.Errorf("per-pid index holds %d pids, want 1 (the exited one dropped)", len(s.byPid))
	}
	s.Apply(&event.Fact{Kind: event.FactProcess, Pid: 10, ProcStart: -5, End: true})
	if got := snapshot(t, s); len(got) != 1 || len(s.byPid) != 0 {
		t.Errorf("after both exits: %d facts, %d pids", len(got), len(s.byPid))
	}
}

// TestMachineWideHandles: a FILE_OBJECT closed by another process than
// the one that opened it, and a thread's exit that does not say its
// process, still end their facts.
func TestMachineWideHandles(t *testing.T) {
	s := New()
	s.Apply(&event.Fact{Kind: event.FactName, Space: event.SpaceFileObject, Pid: 5, Handle: 0xffff1000, Name: `C:\a`})
	s.Apply(&event.Fact{Kind: event.FactThread, Pid: 5, Tid: 9})
	s.Apply(&event.Fact{Kind: event.FactName, Space: event.SpaceFileObject, Pid: 7, Handle: 0xffff1000, End: true})
	s.Apply(&event.Fact{Kind: event.FactThread, Tid: 9, End: true})
	if s.Len() != 0 {
		t.Errorf("%d facts left: %+v", s.Len(), snapshot(t, s))
	}
}

// TestStacksAndModules: every stack and kernel symbol is kept (events of
// a later file refer to them), modules by process and load address until
// unmapped or their process exits; the frames are the Set's own copy.
func TestStacksAndModules(t *testing.T) {
	s := New()
	user := []uint64{0x5555_0000_1000, 0x5555_0000_2000}
	for _, f := range []event.Fact{
		{Kind: event.FactProcess, Pid: 10, ProcStart: -5, Name: "app"},
		{Kind: event.FactModule, Pid: 10, ProcStart: -5, Handle: 0x5555_0000_0000, Size: 0x3000, Name: "/usr/bin/app", Detail: "gnu:01"},
		{Kind: event.FactModule, Pid: 10, ProcStart: -5, Handle: 0x7f00_0000_0000, Size: 0x1000, Name: "/lib/libx.so", Detail: "gnu:02"},
		{Kind: event.FactModule, Pid: 10, ProcStart: -5, Handle: 0x7f00_0000_0000, End: true},
		{Kind: event.FactModule, Handle: 0xffff_ffff_8100_0000, Name: "[kernel.kallsyms]", Detail: "gnu:03"},
		{Kind: event.FactStack, Handle: 1, User: user},
		{Kind: event.FactStack, Handle: 2, Kernel: []uint64{0xffff_ffff_8100_0010}},
		{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8100_0000, Name: "ksys_read"},
		{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8100_1000, Name: "vfs_read"},
	} {
		s.Apply(&f)
	}
	user[0] = 0 // the caller reuses its buffer
	count := map[event.FactKind]int{}
	for _, f := range snapshot(t, s) {
		count[f.Kind]++
		if f.Kind == event.FactStack && f.Handle == 1 && f.User[0] != 0x5555_0000_1000 {
			t.Errorf("stack 1 shares the caller's buffer: %#x", f.User)
		}
	}
	if count[event.FactModule] != 2 || count[event.FactStack] != 2 || count[event.FactKernelSymbol] != 2 {
		t.Fatalf("snapshot kinds %v", count)
	}
	s.Apply(&event.Fact{Kind: event.FactProcess, Pid: 10, ProcStart: -5, End: true})
	count = map[event.FactKind]int{}
	for _, f := range snapshot(t, s) {
		count[f.Kind]++
	}
	if count[event.FactModule] != 1 || count[event.FactStack] != 2 {
		t.Fatalf("after the exit: %v (the kernel's module and the stacks stay)", count)
	}
}
