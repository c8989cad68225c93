package ebpf

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/symbolize"
)

// traceStacks traces args with stacks.
func traceStacks(t *testing.T, args []string, stacks backend.Stacks, layers ...event.Layer) *memSink {
	t.Helper()
	sink := &memSink{}
	opts := backend.Options{Command: args, Layers: layers, Stacks: stacks, Warn: func(m string) { t.Logf("warn: %s", m) }}
	if err := New(Config{MarkerDir: "-"}).Run(t.Context(), opts, sink); err != nil {
		t.Fatal(err)
	}
	return sink
}

// stackOf returns the FactStack of e.
func stackOf(t *testing.T, s *memSink, e *event.Event) *event.Fact {
	t.Helper()
	if e.Stack == 0 {
		t.Fatalf("%s event has no stack", e.Native)
	}
	for i := range s.facts {
		if f := &s.facts[i]; f.Kind == event.FactStack && f.Handle == e.Stack {
			return f
		}
	}
	t.Fatalf("no stack fact %d", e.Stack)
	return nil
}

// userFrames names the user frames of stack st of process pid from the
// trace's module facts, as a reader would: return addresses (all but the
// first frame) are looked up one byte back, inside the call.
func userFrames(s *memSink, pid uint32, st *event.Fact, sym *symbolize.Symbolizer) []symbolize.Frame {
	var mods []symbolize.Module
	for _, f := range s.facts {
		if f.Kind == event.FactModule && f.Pid == pid && !f.End {
			mods = append(mods, symbolize.Module{Path: f.Name, ID: f.Detail, Start: f.Handle, End: f.Handle + f.Size,
				Offset: f.Offset, Vaddr: f.Vaddr, VaddrKnown: f.Flags&event.FactVaddr != 0})
		}
	}
	var out []symbolize.Frame
	for i, a := range st.User {
		if i > 0 {
			a--
		}
		var m *symbolize.Module
		for j := range mods {
			if a >= mods[j].Start && a < mods[j].End {
				m = &mods[j]
			}
		}
		out = append(out, sym.Symbolize(m, a))
	}
	return out
}

// TestUserStackNamesTheCode: a C program built with frame pointers writes
// from main → outer_fn → inner_fn → write_block. The write's user stack,
// named from the trace's module facts alone, holds those four functions in
// that order (innermost first); after the binary is moved into a symbol
// directory under its build ID and deleted, the same frames are named
// from there; a rebuilt binary of another build ID at the original path
// names none of them, and the mismatch is counted (#14).
func TestUserStackNamesTheCode(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	requireTool(t, "gcc")
	dir := t.TempDir()
	bin := filepath.Join(dir, "stacks")
	build := func(extra ...string) {
		args := append([]string{"-O0", "-g", "-fno-omit-frame-pointer", "-o", bin, "testdata/stacks/stacks.c"}, extra...)
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
	}
	build()
	out := filepath.Join(dir, "out")
	s := traceStacks(t, []string{bin, out}, backend.StacksUser, event.LayerFile)
	writes := find(s.events, byNative("write"), byPath(out))
	if len(writes) != 1 {
		t.Fatalf("%d writes to %s, want 1", len(writes), out)
	}
	w := writes[0]
	st := stackOf(t, s, &w)
	if len(st.Kernel) != 0 || len(st.User) < 4 || st.Flags != 0 {
		t.Fatalf("stack %+v: want user frames only, untruncated", st)
	}
	want := []string{"write_block", "inner_fn", "outer_fn", "main"}
	names := func(fr []symbolize.Frame) []string {
		var n []string
		for _, f := range fr {
			n = append(n, f.Function)
		}
		return n
	}
	check := func(what string, fr []symbolize.Frame) {
		t.Helper()
		got := names(fr)
		if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			t.Errorf("%s: frames %q, want %q first", what, got, want)
		}
	}
	sym := symbolize.New(symbolize.Options{DebugDirs: []string{}})
	check("from the module's path", userFrames(s, w.Pid, st, sym))

	id, err := symbolize.ReadID(bin)
	if err != nil || !strings.HasPrefix(id, "gnu:") {
		t.Fatalf("build ID of %s: %q %v", bin, id, err)
	}
	syms := filepath.Join(dir, "symbols")
	hexID := strings.TrimPrefix(id, "gnu:")
	if err := os.MkdirAll(filepath.Join(syms, hexID), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bin, filepath.Join(syms, hexID, "debuginfo")); err != nil {
		t.Fatal(err)
	}
	sym = symbolize.New(symbolize.Options{Dirs: []string{syms}, DebugDirs: []string{}})
	check("from --symbols, the binary deleted", userFrames(s, w.Pid, st, sym))

	build("-Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567")
	if id2, _ := symbolize.ReadID(bin); id2 == id {
		t.Fatal("the rebuilt binary has the same build ID")
	}
	sym = symbolize.New(symbolize.Options{DebugDirs: []string{}})
	for _, f := range userFrames(s, w.Pid, st, sym)[:4] {
		if f.Function != "" {
			t.Errorf("frame named %q from a binary of another build ID", f.Function)
		}
	}
	if sym.Counts()[symbolize.IDMismatch] == 0 {
		t.Errorf("no build-ID mismatch counted: %v", sym.Counts())
	}
}

// kernelNames names a stack's kernel frames from the trace's kernel
// symbol facts.
func kernelNames(s *memSink, st *event.Fact) []string {
	type ks struct {
		addr uint64
		name string
	}
	var syms []ks
	for _, f := range s.facts {
		if f.Kind == event.FactKernelSymbol {
			syms = append(syms, ks{f.Handle, f.Name})
		}
	}
	slices.SortFunc(syms, func(a, b ks) int {
		if a.addr < b.addr {
			return -1
		}
		if a.addr > b.addr {
			return 1
		}
		return 0
	})
	var out []string
	for _, a := range st.Kernel {
		name := "?"
		for _, k := range syms {
			if k.addr <= a {
				name = k.name
			}
		}
		out = append(out, name)
	}
	return out
}

// TestKernelStacksOfBlockIO: the kernel stack of an O_DIRECT read's bio
// holds a block-layer function; that of a buffered read's bio (a cold
// file) a page-cache read-ahead or filemap one (#14).
func TestKernelStacksOfBlockIO(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	requireTool(t, "dd")
	for _, c := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"direct", []string{"iflag=direct"}, []string{"submit_bio", "blkdev_", "iomap_dio", "__blkdev_direct_IO"}},
		{"buffered", nil, []string{"page_cache_ra", "filemap_", "read_pages", "ondemand_readahead"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, ino := coldFile(t, 1<<20)
			args := append([]string{"dd", "if=" + f, "of=/dev/null", "bs=64k"}, c.flags...)
			s := traceStacks(t, args, backend.StacksKernel, event.LayerFile, event.LayerBlock)
			n := 0
			for i := range s.events {
				e := &s.events[i]
				if e.Layer != event.LayerBlock || e.Op != event.OpBlockRead || (e.Inode != ino && c.name == "buffered") {
					continue
				}
				if c.name == "direct" && e.Flags&event.FlagDirect == 0 {
					continue
				}
				n++
				names := kernelNames(s, stackOf(t, s, e))
				found := false
				for _, nm := range names {
					for _, w := range c.want {
						if strings.HasPrefix(nm, w) {
							found = true
						}
					}
				}
				if !found {
					t.Errorf("bio %d: kernel stack %q has none of %q", e.ID, names, c.want)
				}
			}
			if n == 0 {
				t.Fatal("no block read of the file")
			}
		})
	}
}

// stackOuter, stackInner and stackWriteBlock are the Go workload of
// TestGoUserStack (this test binary re-executed): a 4 KiB write through
// os.File.Write from a known chain of calls.
//
//go:noinline
func stackOuter(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return stackInner(f)
}

//go:noinline
func stackInner(f *os.File) error { return stackWriteBlock(f) }

//go:noinline
func stackWriteBlock(f *os.File) error {
	_, err := f.Write(make([]byte, 4096))
	return err
}

// TestGoUserStack: the same through a Go test binary's os.File.Write
// (this one, re-executed): the write's user stack, named through the
// binary's own symbol table (pclntab), holds stackWriteBlock, stackInner,
// stackOuter and TestMain in that order.
func TestGoUserStack(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	out := filepath.Join(t.TempDir(), "out")
	t.Setenv("IOTRACE_WORKLOAD", "gowrite")
	t.Setenv("IOTRACE_WORKLOAD_FILE", out)
	s := traceStacks(t, []string{os.Args[0]}, backend.StacksUser, event.LayerFile)
	writes := find(s.events, byNative("write"), byPath(out))
	if len(writes) != 1 {
		t.Fatalf("%d writes to %s, want 1", len(writes), out)
	}
	st := stackOf(t, s, &writes[0])
	var got []string
	for _, f := range userFrames(s, writes[0].Pid, st, symbolize.New(symbolize.Options{DebugDirs: []string{}})) {
		got = append(got, f.Function)
	}
	pkg := "github.com/iotrace/iotrace/backend/ebpf."
	want := []string{pkg + "stackWriteBlock", pkg + "stackInner", pkg + "stackOuter", pkg + "TestMain"}
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Errorf("frames %q (%v): want %q in that order; stats %+v", got, st.Flags, want, s.trailer)
	}
}
