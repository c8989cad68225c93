package stackprof

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/stacks"
	"github.com/iotrace/iotrace/symbolize"
)

// hostileTable holds a stack whose kernel frame is named by a kernel
// symbol and whose user frame is in a module, both names with terminal
// escapes, used by process 1 ("evil\x1b]0;t\x07").
func hostileTable() *stacks.Table {
	tab := stacks.New(stacks.Options{Symbols: symbolize.Options{DebugDirs: []string{}, NoModulePath: true}})
	tab.Fact(&event.Fact{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8100_0000, Size: 0x1000, Name: "k\x1b[2Jsym"})
	tab.Fact(&event.Fact{Kind: event.FactModule, Rundown: true, Pid: 1, Handle: 0x1000, Size: 0x1000, Name: "/lib/m\x1b[31m.so"})
	tab.Fact(&event.Fact{Kind: event.FactStack, Handle: 1, Kernel: []uint64{0xffff_ffff_8100_0010}, User: []uint64{0x1010}})
	return tab
}

func hostileEvent() *event.Event {
	e := event.New()
	e.Pid, e.Tid, e.Comm, e.Op, e.Layer, e.Stack, e.Bytes, e.Duration = 1, 1, "evil\x1b]0;t\x07", event.OpWrite, event.LayerFile, 1, 10, 5
	return &e
}

// TestOutputsEscapeControlBytes: folded lines and pprof strings show
// control bytes from the trace (module, kernel symbol and process names)
// as the text output does (issue 25, item 8), never raw.
func TestOutputsEscapeControlBytes(t *testing.T) {
	tab := hostileTable()
	a := NewAggregator(tab)
	a.Add(hostileEvent())
	var folded bytes.Buffer
	if err := a.WriteFolded(&folded, WeightCount); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(folded.String(), "\x1b\x07") || !strings.Contains(folded.String(), "[k] k␛[2Jsym") {
		t.Errorf("folded: %q", folded.String())
	}
	var buf bytes.Buffer
	if err := a.Profile().Write(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, f := range p.Function {
		all = append(all, f.Name, f.SystemName, f.Filename)
	}
	for _, m := range p.Mapping {
		all = append(all, m.File)
	}
	for _, s := range p.Sample {
		for _, v := range s.Label {
			all = append(all, v...)
		}
	}
	if s := strings.Join(all, "|"); strings.ContainsAny(s, "\x1b\x07") || !strings.Contains(s, "m␛[31m.so") {
		t.Errorf("pprof strings: %q", s)
	}
}

// TestFrameKeysBounded: one deep stack used by many processes is named
// per process; the keys remembered stay within their bound (issue 25,
// item 3: the map had none).
func TestFrameKeysBounded(t *testing.T) {
	tab := stacks.New(stacks.Options{Symbols: symbolize.Options{DebugDirs: []string{}, NoModulePath: true}})
	f := &event.Fact{Kind: event.FactStack, Handle: 1, User: make([]uint64, stacks.MaxFrames)}
	for i := range f.User {
		f.User[i] = 0x7f00_0000_0000 + uint64(i)*16
	}
	tab.Fact(f)
	// A module of the kernel's with a long name holds the frames of
	// every process: keys of about 200 KB.
	tab.Fact(&event.Fact{Kind: event.FactModule, Rundown: true, Handle: 0x7f00_0000_0000, Size: 1 << 30, Name: "/" + strings.Repeat("m", 200)})
	a := NewAggregator(tab)
	for pid := range uint32(2*maxFrameKeyBytes/(stacks.MaxFrames*200) + 1) { // past the bound twice
		e := hostileEvent()
		e.Pid, e.Comm = pid+1, "p"
		a.Add(e)
	}
	if a.frameKeyBytes > maxFrameKeyBytes || len(a.byKey) != 1 {
		t.Errorf("frame keys of %d bytes (bound %d), %d samples", a.frameKeyBytes, maxFrameKeyBytes, len(a.byKey))
	}
}
