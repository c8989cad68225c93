package stacks

import (
	"runtime"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
)

func newTestTable() *Table {
	return New(Options{Symbols: symbolize.Options{DebugDirs: []string{}, NoModulePath: true}})
}

// deepStack is a stack fact of n user frames in the module mapped at
// base.
func deepStack(id uint64, n int, base uint64) *event.Fact {
	f := &event.Fact{Kind: event.FactStack, Handle: id, User: make([]uint64, n)}
	for i := range f.User {
		f.User[i] = base + 0x100 + uint64(i)*16
	}
	return f
}

func eventOf(pid uint32, stack uint64, at int64) *event.Event {
	e := event.New()
	e.Pid, e.Tid, e.Stack, e.Time, e.Op, e.Layer = pid, pid, stack, at, event.OpWrite, event.LayerFile
	return &e
}

// TestFactsThatChangeNothing: one deep stack used by 1,000 events, each
// after a module fact that changes nothing it names (the end of a
// mapping nothing made, a mapping in another process), is named once
// (issue 25, item 3: rebuilt and kept 1,000 times, 1.2 GB).
func TestFactsThatChangeNothing(t *testing.T) {
	tab := newTestTable()
	const base = 0x5555_0000_0000
	tab.Fact(&event.Fact{Kind: event.FactModule, Rundown: true, Pid: 7, Handle: base, Size: 1 << 30, Name: "/bin/app", Detail: "gnu:0123456789abcdef"})
	tab.Fact(deepStack(1, 10_000, base))
	var first *Stack
	var alloc uint64
	t0 := time.Now()
	alloc = allocatedBy(func() {
		for i := range 1000 {
			switch i % 3 {
			case 0:
				tab.Fact(&event.Fact{Kind: event.FactModule, End: true, Pid: 7, Handle: 0x1000 + uint64(i)})
			case 1:
				tab.Fact(&event.Fact{Kind: event.FactModule, Pid: 8, Handle: base, Size: 1 << 30, Name: "/bin/other", Time: int64(i)})
			case 2:
				tab.Fact(&event.Fact{Kind: event.FactModule, Pid: 7, Handle: 0x7f00_0000_0000, Size: 1 << 20, Name: "/lib/x.so", Time: int64(i)})
			}
			st := tab.Frames(eventOf(7, 1, int64(i)))
			if first == nil {
				first = st
			}
			if st != first {
				t.Fatalf("event %d: the stack was named again after a fact that changes none of its frames", i)
			}
		}
	})
	if d := time.Since(t0); alloc > 100<<20 || d > 2*time.Second {
		t.Errorf("1,000 events: %d MB, %v", alloc>>20, d)
	}
	if len(first.Frames) != MaxFrames || first.Flags&event.FactUserTruncated == 0 {
		t.Errorf("%d frames, flags %v: want %d, user part truncated", len(first.Frames), first.Flags, MaxFrames)
	}
}

// TestFactsThatChangeFrames: a fact that changes what names a cached
// stack's frames makes it named again: a module mapped over them in its
// process, the end of their mapping, a kernel symbol below its kernel
// frames; a kernel symbol above them does not.
func TestFactsThatChangeFrames(t *testing.T) {
	tab := newTestTable()
	const base = 0x5555_0000_0000
	tab.Fact(&event.Fact{Kind: event.FactModule, Rundown: true, Pid: 7, Handle: base, Size: 1 << 20, Name: "/bin/app", Detail: "gnu:0123456789abcdef"})
	st := deepStack(1, 3, base)
	st.Kernel = []uint64{0xffff_ffff_8100_0100}
	tab.Fact(st)
	tab.Fact(&event.Fact{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8100_0000, Name: "ksys_write"})
	names := func() (*Stack, string) {
		s := tab.Frames(eventOf(7, 1, 100))
		return s, FrameString(s.Frames[0]) + " " + FrameString(s.Frames[1])
	}
	s0, n0 := names()
	tab.Fact(&event.Fact{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8200_0000, Name: "above"})
	if s, _ := names(); s != s0 {
		t.Error("a kernel symbol above every kernel frame made the stack named again")
	}
	tab.Fact(&event.Fact{Kind: event.FactKernelSymbol, Handle: 0xffff_ffff_8100_0080, Name: "vfs_write"})
	s1, n1 := names()
	if s1 == s0 || n1 == n0 {
		t.Errorf("a kernel symbol below a kernel frame: %q, named again %v", n1, s1 != s0)
	}
	tab.Fact(&event.Fact{Kind: event.FactModule, Pid: 7, Handle: base, Size: 1 << 20, Name: "/bin/newapp", Detail: "gnu:0123456789abcdef", Time: 50})
	s2, n2 := names()
	if s2 == s1 || n2 == n1 {
		t.Errorf("a module mapped over the frames: %q", n2)
	}
	tab.Fact(&event.Fact{Kind: event.FactModule, End: true, Pid: 7, Handle: base, Time: 60})
	if s3, n3 := names(); s3 == s2 || n3 == n2 {
		t.Errorf("the mapping ended: %q", n3)
	}
}

// TestCacheBound: stacks of many processes fill the cache up to its
// bound, not beyond.
func TestCacheBound(t *testing.T) {
	tab := newTestTable()
	tab.Fact(deepStack(1, MaxFrames, 0x1000))
	// Enough stacks of MaxFrames frames, rendered, to pass the bound
	// twice.
	n := uint32(2*maxCacheBytes/(MaxFrames*(frameBytes+stringHeader)) + 1)
	for pid := range n {
		tab.FrameStrings(eventOf(pid+1, 1, 0))
	}
	if tab.cacheBytes > maxCacheBytes || len(tab.cache) == 0 {
		t.Errorf("cache of %d bytes, %d entries (bound %d)", tab.cacheBytes, len(tab.cache), maxCacheBytes)
	}
}

func allocatedBy(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}
