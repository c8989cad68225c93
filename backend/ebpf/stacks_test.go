package ebpf

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/unwind"
)

// TestParseMaps: code and data mappings of files are kept with their
// range, offset and path (spaces included); anonymous ones are not; a
// malformed line is an error naming it.
func TestParseMaps(t *testing.T) {
	in := "55d4c3a00000-55d4c3a01000 r--p 00000000 fe:00 131 /usr/bin/cat\n" +
		"55d4c3a01000-55d4c3a05000 r-xp 00001000 fe:00 131 /usr/bin/cat\n" +
		"7f1e2a000000-7f1e2a021000 rw-p 00000000 00:00 0 \n" +
		"7f1e2a200000-7f1e2a228000 r-xp 00028000 fe:00 326269 /tmp/a dir/lib b.so\n" +
		"7ffd1000-7ffd2000 r-xp 00000000 00:00 0 [vdso]\n"
	ms, err := parseMaps([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || !ms[1].exec || ms[0].exec || ms[1].start != 0x55d4c3a01000 || ms[1].end != 0x55d4c3a05000 ||
		ms[1].offset != 0x1000 || ms[2].path != "/tmp/a dir/lib b.so" || ms[2].inode != 326269 {
		t.Errorf("mappings %+v", ms)
	}
	for _, bad := range []string{"zz-10 r-xp 0 fe:00 1 /x\n", "10-5 r-xp 0 fe:00 1 /x\n", "10-20 r-xp\n"} {
		if _, err := parseMaps([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestKernelBuildID: the GNU build ID note among the kernel's notes.
func TestKernelBuildID(t *testing.T) {
	note := func(name string, typ uint32, desc []byte) []byte {
		b := le.AppendUint32(nil, uint32(len(name)+1))
		b = le.AppendUint32(b, uint32(len(desc)))
		b = le.AppendUint32(b, typ)
		n := append([]byte(name), 0)
		for len(n)%4 != 0 {
			n = append(n, 0)
		}
		b = append(b, n...)
		d := append([]byte(nil), desc...)
		for len(d)%4 != 0 {
			d = append(d, 0)
		}
		return append(b, d...)
	}
	b := append(note("Xen", 1, []byte{1, 2, 3}), note("GNU", 3, []byte{0xde, 0xad, 0xbe, 0xef})...)
	if got := kernelBuildID(b); got != "deadbeef" {
		t.Errorf("build ID %q, want deadbeef", got)
	}
	if got := kernelBuildID(b[:len(b)-3]); got != "" {
		t.Errorf("truncated notes: %q", got)
	}
}

// TestStackTable: one fact per distinct stack, before its first use; IDs
// reused for the same frames; errors and truncation flagged and counted.
func TestStackTable(t *testing.T) {
	frames := map[int32][]uint64{1: {0x10, 0x20}, 2: {0xffff0010}, 3: make([]uint64, maxStackDepth)}
	for i := range frames[3] {
		frames[3][i] = uint64(i + 1)
	}
	reads := 0
	var facts []event.Fact
	st := newStackTable(func(id int32) ([]uint64, error) {
		reads++
		if f, ok := frames[id]; ok {
			return f, nil
		}
		return nil, errors.New("no such stack")
	}, nil, func(f *event.Fact) { facts = append(facts, *f) }, nil)
	a := st.id(1, 2)
	if b := st.id(1, 2); b != a || a == 0 {
		t.Errorf("ids %d, %d", a, b)
	}
	if c := st.id(1, -1); c == a {
		t.Error("user-only stack took the user+kernel stack's ID")
	}
	if st.id(-1, -1) != 0 {
		t.Error("an event without stacks got one")
	}
	lost := st.id(-14, 2)
	trunc := st.id(3, -1)
	missing := st.id(9, -1)
	if reads != 4 {
		t.Errorf("%d map reads, want 4 (each map ID once)", reads)
	}
	var stacks []event.Fact
	for _, f := range facts {
		if f.Kind == event.FactStack {
			stacks = append(stacks, f)
		}
	}
	if len(stacks) != 5 {
		t.Fatalf("%d stack facts, want 5", len(stacks))
	}
	for _, f := range stacks {
		switch f.Handle {
		case a:
			if len(f.User) != 2 || len(f.Kernel) != 1 || f.Flags != 0 {
				t.Errorf("stack %+v", f)
			}
		case lost:
			if f.Flags != event.FactUserLost || len(f.Kernel) != 1 {
				t.Errorf("lost user part: %+v", f)
			}
		case trunc:
			if f.Flags != event.FactUserTruncated {
				t.Errorf("full stack: flags %v", f.Flags)
			}
		case missing:
			if f.Flags != event.FactUserLost {
				t.Errorf("unreadable stack: flags %v", f.Flags)
			}
		}
	}
	var s event.Stats
	st.stats(&s)
	if s.Get(event.CountUnresolved, "user stacks not captured: no stack to walk (a kernel thread's user stack, or a fault while walking)") != 1 {
		t.Errorf("stats %+v", s)
	}
	if s.Get(event.CountUnresolved, "kernel frames outside every kernel symbol known at record time (/proc/kallsyms)") == 0 {
		t.Errorf("kernel frames without symbols not counted: %+v", s)
	}
}

// TestInlineStack: a user stack sent inline (its stacks-map bucket held
// another stack) goes to the event the kernel sent it for, with its
// frames, and the stack record's decoder refuses a frame count larger
// than the record.
func TestInlineStack(t *testing.T) {
	sink := &memSink{}
	tr := newTracker(sink, 0, nil)
	tr.stacks = newStackTable(func(int32) ([]uint64, error) { return nil, errors.New("not in the map") }, nil, tr.fact, nil)
	b := make([]byte, stackHdrSize+3*8)
	b[0] = recStack
	le.PutUint64(b[16:], 77)
	le.PutUint32(b[24:], 3)
	for i := range 3 {
		le.PutUint64(b[stackHdrSize+8*i:], uint64(0x1000+i))
	}
	if err := tr.handle(b); err != nil {
		t.Fatal(err)
	}
	r := syscallRec{header: header{Type: recSyscall, Kind: sc("read")}, ID: 77, UStack: errEEXIST, KStack: -1}
	tr.syscall(&r, true)
	if len(sink.events) != 1 || sink.events[0].Stack == 0 {
		t.Fatalf("events %+v", sink.events)
	}
	var st *event.Fact
	for i := range sink.facts {
		if sink.facts[i].Kind == event.FactStack {
			st = &sink.facts[i]
		}
	}
	if st == nil || st.Handle != sink.events[0].Stack || len(st.User) != 3 || st.User[2] != 0x1002 || st.Flags != 0 {
		t.Fatalf("stack fact %+v", st)
	}
	le.PutUint32(b[24:], 4)
	var sr stackRec
	if err := sr.decode(b); err == nil {
		t.Error("a stack record claiming more frames than it holds decoded")
	}
}

// TestCutAndCopies: a frame-pointer walk's frames are cut before the
// first return address no module of the process holds (ASCII read as an
// address: it printed as a [kernel] frame), flagged truncated and counted;
// a stack sent as a copy is walked by the walker with the event's process
// and paired with its event.
func TestCutAndCopies(t *testing.T) {
	sink := &memSink{}
	tr := newTracker(sink, 0, nil)
	maps := map[int32][]uint64{5: {0x1100, 0x1200, 0x696c0a3120656e69, 0x1300}}
	tr.stacks = newStackTable(func(id int32) ([]uint64, error) { return maps[id], nil }, nil, tr.fact, nil)
	tr.mods = newModuleTable(tr.fact)
	tr.mods.mapped(10, 0, 0, true, 0x1000, 0x2000, 0, "/bin/prog", fileKey{})
	var walked []uint32
	tr.copies.walk = func(pid uint32, c *uStackCopyRec) userPart {
		walked = append(walked, pid)
		return userPart{ips: []uint64{c.PC, 0x1234}, stop: 0}
	}
	r := syscallRec{header: header{Type: recSyscall, Kind: sc("read")}, ID: 1, Pid: 10, Tid: 10, UStack: 5, KStack: -1}
	tr.syscall(&r, true)
	cp := make([]byte, uStackCopyHdrSize+16)
	cp[0] = recUStackCopy
	le.PutUint64(cp[16:], 2)      // event ID
	le.PutUint64(cp[24:], 0x1180) // pc
	le.PutUint32(cp[60:], 16)     // bytes of stack
	if err := tr.handle(cp); err != nil {
		t.Fatal(err)
	}
	r = syscallRec{header: header{Type: recSyscall, Kind: sc("read")}, ID: 2, Pid: 10, Tid: 10, UStack: ustackCopied, KStack: -1}
	tr.syscall(&r, true)
	stacks := map[uint64]*event.Fact{}
	for i := range sink.facts {
		if f := &sink.facts[i]; f.Kind == event.FactStack {
			stacks[f.Handle] = f
		}
	}
	if len(sink.events) != 2 {
		t.Fatalf("%d events", len(sink.events))
	}
	cut := stacks[sink.events[0].Stack]
	if cut == nil || !slices.Equal(cut.User, []uint64{0x1100, 0x1200}) || cut.Flags != event.FactUserTruncated {
		t.Errorf("frame-pointer stack %+v: want 0x1100 0x1200, truncated", cut)
	}
	cop := stacks[sink.events[1].Stack]
	if cop == nil || !slices.Equal(cop.User, []uint64{0x1180, 0x1234}) || cop.Flags != 0 || !slices.Equal(walked, []uint32{10}) {
		t.Errorf("copied stack %+v (walked for %v): want 0x1180 0x1234", cop, walked)
	}
	var s event.Stats
	tr.stats(&s)
	if s.Get(event.CountUnresolved, "user stacks ended early (user-truncated): "+unwind.StopBadAddress.String()) != 1 ||
		s.Get(event.CountInfo, copiesWalked) != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestForkedChildModules: a forked child runs its parent's code until it
// execs: its first stack writes the parent's modules as its own (before
// the stack), once; a child without stacks writes none.
func TestForkedChildModules(t *testing.T) {
	sink := &memSink{}
	tr := newTracker(sink, 0, nil)
	tr.stacks = newStackTable(func(id int32) ([]uint64, error) { return []uint64{0x1100}, nil }, nil, tr.fact, nil)
	tr.mods = newModuleTable(tr.fact)
	tr.mods.mapped(10, 0, 0, true, 0x1000, 0x2000, 0, "/bin/prog", fileKey{})
	tr.mods.forked(10, 11, 500, 500)
	tr.mods.forked(10, 12, 600, 600)
	for i := 0; i < 2; i++ {
		r := syscallRec{header: header{Type: recSyscall, Kind: sc("read")}, ID: uint64(i + 1), Pid: 11, Tid: 11, UStack: 1, KStack: -1}
		tr.syscall(&r, true)
	}
	var child11, child12, stackAt, moduleAt int
	for i, f := range sink.facts {
		switch {
		case f.Kind == event.FactModule && f.Pid == 11:
			child11++
			moduleAt = i
			if f.Handle != 0x1000 || f.Name != "/bin/prog" || f.ProcStart != 500 {
				t.Errorf("child's module %+v", f)
			}
		case f.Kind == event.FactModule && f.Pid == 12:
			child12++
		case f.Kind == event.FactStack:
			stackAt = i
		}
	}
	if child11 != 1 || child12 != 0 || moduleAt > stackAt {
		t.Errorf("child 11: %d module facts (at %d, its stack at %d), child 12: %d; want 1 before the stack, 0", child11, moduleAt, stackAt, child12)
	}
}

// TestStacksBits checks that the BPF programs read --stacks with the
// bits of backend.Stacks (bpf/cur_syscall.h, STACKS_*), which the loaders
// pass as they are.
func TestStacksBits(t *testing.T) {
	h, err := os.ReadFile("bpf/cur_syscall.h")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]backend.Stacks{"STACKS_USER": backend.StacksUser, "STACKS_KERNEL": backend.StacksKernel} {
		if def := fmt.Sprintf("#define %s %d\n", name, v); !strings.Contains(string(h), def) {
			t.Errorf("bpf/cur_syscall.h does not say %q", def)
		}
	}
}
