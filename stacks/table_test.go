package stacks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/stacktest"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/symbolize"
	"github.com/iotrace/iotrace/symbolize/dbghelp"
)

// TestSynthStacks: frames come from the trace's own facts: kernel
// symbols name kernel frames, modules give module+offset, a module
// unmapped before the event no longer holds its addresses, and every
// unnamed frame is counted by reason.
func TestSynthStacks(t *testing.T) {
	tr := synth.StacksTrace()
	tab := New(Options{Symbols: symbolize.Options{DebugDirs: []string{}, NoModulePath: true}})
	var got [][]string
	err := tr.Replay(tab.Feed(eventFunc(func(e *event.Event) {
		var names []string
		if st := tab.Frames(e); st != nil {
			for _, f := range st.Frames {
				names = append(names, FrameString(f))
			}
		}
		got = append(got, names)
	})))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"app+0x2123", "app+0x2456", "libc.so.6+0x29abc"},
		{"app+0x2123", "app+0x2456", "libc.so.6+0x29abc"},
		{"[k] ext4_file_write_iter", "[k] ksys_write", "app+0x2200"},
		{"[k] ext4_file_write_iter"},
		nil,
	}
	if len(got) != len(want) {
		t.Fatalf("%d events", len(got))
	}
	for i := range want {
		if strings.Join(got[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}
	var s event.Stats
	tab.AddStats(&s)
	// 7 user frames: module files not found (NoModulePath, no dirs).
	if n := s.Get(event.CountUnresolved, "stack "+symbolize.NoFile.String()); n != 7 {
		t.Errorf("not found: %d, stats %+v", n, s)
	}
	if n := s.Get(event.CountInfo, "stack frames named"); n != 3 {
		t.Errorf("named: %d, stats %+v", n, s)
	}
}

// TestUnknownStackAndModule: a stack ID without its fact, an address in
// no module: counted, never named.
func TestUnknownStackAndModule(t *testing.T) {
	tab := New(Options{Symbols: symbolize.Options{DebugDirs: []string{}}})
	tab.Fact(&event.Fact{Kind: event.FactStack, Handle: 1, User: []uint64{0x1234}, Kernel: []uint64{0xffffffff81000000}})
	e := event.New()
	e.Stack = 2
	if st := tab.Frames(&e); st != nil {
		t.Fatalf("unknown stack gave %v", st)
	}
	e.Stack = 1
	st := tab.Frames(&e)
	if st == nil || len(st.Frames) != 2 || st.Frames[1].String() != "0x1234" || st.Frames[0].Function != "" {
		t.Fatalf("%+v", st)
	}
	var s event.Stats
	tab.AddStats(&s)
	if s.Get(event.CountUnresolved, "stack "+unknownStack) != 1 || s.Get(event.CountUnresolved, "stack "+noKernelSyms) != 1 ||
		s.Get(event.CountUnresolved, "stack "+symbolize.NoModule.String()) != 1 {
		t.Fatalf("%+v", s)
	}
}

// TestUserFrameNeverKernel: a user address no module of the process
// holds is unknown, never a frame of the Linux kernel's module fact
// (which has no range): it printed as [kernel]+0x7fe0… before.
func TestUserFrameNeverKernel(t *testing.T) {
	tab := New(Options{Symbols: symbolize.Options{DebugDirs: []string{}, NoModulePath: true}})
	tab.Fact(&event.Fact{Kind: event.FactModule, Rundown: true, Name: "[kernel]", Detail: "gnu:0123"})
	tab.Fact(&event.Fact{Kind: event.FactStack, Handle: 1, User: []uint64{0x7fe012345678, 0x696c0a3120656e69}})
	e := event.New()
	e.Pid, e.Stack = 42, 1
	st := tab.Frames(&e)
	if st == nil || len(st.Frames) != 2 {
		t.Fatalf("%+v", st)
	}
	for i, f := range st.Frames {
		if s := FrameString(f); !strings.HasPrefix(s, "[unknown] 0x") || f.Module != "" {
			t.Errorf("frame %d: %q (module %q), want [unknown] 0x…", i, s, f.Module)
		}
	}
}

// TestRealELF: return addresses inside a real binary's functions are
// named from it, from a --symbols directory when it is gone, and never
// from a rebuilt binary with another build-id.
func TestRealELF(t *testing.T) {
	dir := testenv.TempDir(t)
	bin := stacktest.BuildProg(t, dir, 1)
	fact, stack := stacktest.ProgFacts(t, bin, 4242, 0x5555_5555_4000)
	tab := New(Options{Symbols: symbolize.Options{DebugDirs: []string{}}})
	tab.Fact(&fact)
	tab.Fact(&stack)
	e := event.New()
	e.Pid, e.Stack = 4242, stack.Handle
	var names []string
	for _, f := range tab.Frames(&e).Frames {
		names = append(names, f.Function)
	}
	if strings.Join(names, ",") != "write_block,inner_fn,outer_fn,main" {
		t.Fatalf("frames %q", names)
	}
	stacktest.BuildProg(t, dir, 2)
	tab = New(Options{Symbols: symbolize.Options{DebugDirs: []string{}}})
	tab.Fact(&fact)
	tab.Fact(&stack)
	for _, f := range tab.Frames(&e).Frames {
		if f.Function != "" || f.Reason != symbolize.IDMismatch || !strings.HasPrefix(f.String(), "prog+0x") {
			t.Errorf("rebuilt binary: frame %+v", f)
		}
	}
	var s event.Stats
	tab.AddStats(&s)
	if n := s.Get(event.CountUnresolved, "stack "+symbolize.IDMismatch.String()); n != 4 {
		t.Errorf("mismatches counted %d: %+v", n, s)
	}
}

type eventFunc func(e *event.Event)

func (eventFunc) Begin(*event.Header) error    { return nil }
func (f eventFunc) Event(e *event.Event) error { f(e); return nil }
func (eventFunc) Fact(*event.Fact) error       { return nil }
func (eventFunc) End(*event.Trailer) error     { return nil }

// peNamer names every address it is asked about after the identity and
// RVA, to show what the table hands to the symbolizer's PE resolver.
type peNamer struct{ asked []string }

func (p *peNamer) Resolve(id, path string, size, rva uint64) dbghelp.Result {
	p.asked = append(p.asked, fmt.Sprintf("%s %s %#x %#x", id, path, size, rva))
	return dbghelp.Result{Function: "fn", Outcome: dbghelp.Named}
}

// TestWindowsModuleIdentity: a Windows module fact carries its PE
// identity in Detail and its PDB identity in Image; frames in it are
// named by the PDB identity.
func TestWindowsModuleIdentity(t *testing.T) {
	pe := &peNamer{}
	tab := New(Options{Symbols: symbolize.Options{PE: pe, DebugDirs: []string{}, NoModulePath: true}})
	const pdbID = "pdb:app.pdb/F00D48B2BB5AC9BE4C4C44205044422E1"
	tab.Fact(&event.Fact{Kind: event.FactModule, Pid: 10, ProcStart: 5, Rundown: true, Handle: 0x140000000, Size: 0x3000,
		Name: `C:\app\app.exe`, Detail: "pe:6B068FB83000", Image: pdbID})
	tab.Fact(&event.Fact{Kind: event.FactStack, Handle: 1, User: []uint64{0x140001013}})
	e := event.New()
	e.Pid, e.ProcStart, e.Stack, e.Time = 10, 5, 1, 100
	st := tab.Frames(&e)
	if st == nil || len(st.Frames) != 1 || st.Frames[0].Function != "fn" {
		t.Fatalf("%+v", st)
	}
	if want := pdbID + ` C:\app\app.exe 0x3000 0x1012`; len(pe.asked) != 1 || pe.asked[0] != want {
		t.Errorf("asked %q, want %q", pe.asked, want)
	}
}
