package ebpf

import (
	"bufio"
	"bytes"
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

// The tests of user stacks walked with unwind tables (bpf/unwind.h,
// package unwind) on this system's own binaries: Debian's libc,
// libstdc++, git and python3 have no frame pointers.

// unwindTrace traces args with user stacks walked as walk, unwind tables
// cached in a directory of the test's own.
func unwindTrace(t *testing.T, walk backend.StackWalk, args ...string) *memSink {
	t.Helper()
	sink := &memSink{}
	opts := backend.Options{Command: args, Layers: []event.Layer{event.LayerFile}, Stacks: backend.StacksUser, StackWalk: walk,
		Warn: func(m string) { t.Logf("warn: %s", m) }}
	if err := New(Config{MarkerDir: "-", UnwindCacheDir: filepath.Join(t.TempDir(), "unwind")}).Run(t.Context(), opts, sink); err != nil {
		t.Fatal(err)
	}
	return sink
}

// buildProg compiles src (C or C++, by its compiler) into dir/name.
func buildProg(t *testing.T, compiler, src, out string, flags ...string) {
	t.Helper()
	cc := testenv.Tool(t, compiler)
	args := append(append([]string{}, flags...), "-g", "-o", out, src)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, src, err, b)
	}
}

// frameKeys names frames for comparing with a debugger: the function for
// frames in the program itself (without a C++ signature or the ".cold"
// of a function's split part: gdb names from DWARF, symbol tables have
// both), the library's file name for the others (their symbol names
// differ between aliases: __write, __GI___libc_write).
func frameKeys(frames []symbolize.Frame, prog string) []string {
	var out []string
	for _, f := range frames {
		if f.Module == prog {
			fn, _, _ := strings.Cut(f.Function, "(")
			out = append(out, strings.TrimSuffix(fn, ".cold"))
		} else {
			out = append(out, f.Module)
		}
	}
	return out
}

// gdbBacktrace runs args under gdb, stops at the first write(2) and
// returns its backtrace as frameKeys does.
func gdbBacktrace(t *testing.T, args ...string) []string {
	t.Helper()
	gdb := testenv.Tool(t, "gdb")
	script := `python
f = gdb.newest_frame()
while f is not None:
    print("FRAME|%s|%s" % (f.name() or "?", gdb.solib_name(f.pc()) or ""))
    f = f.older()
end
`
	sf := filepath.Join(t.TempDir(), "bt.gdb")
	if err := os.WriteFile(sf, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gdb, append([]string{"-batch", "-nx", "-ex", "set debuginfod enabled off", "-ex", "set backtrace past-main on",
		"-ex", "set backtrace past-entry on", "-ex", "catch syscall write", "-ex", "run", "-x", sf, "--args"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	var keys []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "|")
		if len(f) != 3 || f[0] != "FRAME" {
			continue
		}
		if f[2] != "" {
			keys = append(keys, filepath.Base(f[2]))
		} else {
			keys = append(keys, f[1])
		}
	}
	if len(keys) == 0 {
		t.Fatalf("gdb printed no frames:\n%s", out)
	}
	return keys
}

// writesTo returns the write events to path, with their stacks.
func writesTo(t *testing.T, s *memSink, path string, n int) ([]event.Event, []*event.Fact) {
	t.Helper()
	ws := find(s.events, byNatives("write", "writev"), byPath(path))
	if len(ws) != n {
		t.Fatalf("%d writes to %s, want %d", len(ws), path, n)
	}
	var sts []*event.Fact
	for i := range ws {
		sts = append(sts, stackOf(t, s, &ws[i]))
	}
	return ws, sts
}

// TestUnwindCChain: a C program calls write(2) through Debian's libc
// from main → wombat_outer → wombat_middle → wombat_leaf_write, built
// -O2 without and with frame pointers. Each write's user stack holds
// every frame gdb's backtrace holds at the same call, in order, to
// _start, with no flag; the three writes (one call path) share one stack
// fact. The frames are named again from a --symbols directory once the
// binary is deleted. With frame pointers only, the caller of write
// (wombat_leaf_write) was missing, and without them the stack was
// __write alone, unflagged.
func TestUnwindCChain(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	for _, v := range []struct {
		name  string
		flags []string
	}{{"omit-frame-pointer", []string{"-O2", "-fomit-frame-pointer"}}, {"frame-pointer", []string{"-O2", "-fno-omit-frame-pointer"}}} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "chain")
			buildProg(t, "gcc", "testdata/unwind/chain.c", bin, v.flags...)
			out := filepath.Join(dir, "out")
			want := gdbBacktrace(t, bin, filepath.Join(dir, "gdb-out"))
			for _, fn := range []string{"wombat_leaf_write", "wombat_middle", "wombat_outer", "main"} {
				if !slices.Contains(want, fn) {
					t.Fatalf("gdb's backtrace %q lacks %s", want, fn)
				}
			}
			s := unwindTrace(t, backend.WalkTables, bin, out)
			ws, sts := writesTo(t, s, out, 3)
			for i, st := range sts {
				if st.Handle != sts[0].Handle {
					t.Errorf("write %d: stack %d, write 0's %d: one call path, two stack facts", i, st.Handle, sts[0].Handle)
				}
			}
			st := sts[0]
			if st.Flags != 0 || len(st.Kernel) != 0 {
				t.Errorf("stack flags %v, %d kernel frames: want a complete user stack", st.Flags, len(st.Kernel))
			}
			sym := symbolize.New(symbolize.Options{DebugDirs: []string{}})
			got := frameKeys(userFrames(s, ws[0].Pid, st, sym), "chain")
			if !slices.Equal(got, want) {
				t.Errorf("frames %q, gdb's %q", got, want)
			}

			id, err := symbolize.ReadID(bin)
			if err != nil || !strings.HasPrefix(id, "gnu:") {
				t.Fatalf("build ID of %s: %q %v", bin, id, err)
			}
			syms := filepath.Join(dir, "symbols")
			if err := os.MkdirAll(filepath.Join(syms, id[4:]), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(bin, filepath.Join(syms, id[4:], "debuginfo")); err != nil {
				t.Fatal(err)
			}
			sym = symbolize.New(symbolize.Options{Dirs: []string{syms}, DebugDirs: []string{}})
			if got := frameKeys(userFrames(s, ws[0].Pid, st, sym), "chain"); !slices.Equal(got, want) {
				t.Errorf("offline: frames %q, gdb's %q", got, want)
			}
		})
	}
}

// TestUnwindCPlusPlus: C++ with exceptions: catcher catches what thrower
// threw and writes in its handler through an std::ofstream; the write's
// stack is gdb's at the same call: libstdc++'s frames, then catcher and
// main, to _start, unflagged.
func TestUnwindCPlusPlus(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	bin := filepath.Join(dir, "exc")
	buildProg(t, "g++", "testdata/unwind/exc.cpp", bin, "-O2")
	out := filepath.Join(dir, "out")
	want := gdbBacktrace(t, bin, filepath.Join(dir, "gdb-out"))
	if i, j := slices.Index(want, "catcher"), slices.Index(want, "main"); i < 0 || j < i || !slices.Contains(want, "libstdc++.so.6") {
		t.Fatalf("gdb's backtrace %q: want libstdc++ frames, catcher, main", want)
	}
	s := unwindTrace(t, backend.WalkTables, bin, out)
	ws, sts := writesTo(t, s, out, 1)
	if sts[0].Flags != 0 {
		t.Errorf("stack flags %v: want a complete stack", sts[0].Flags)
	}
	got := frameKeys(userFrames(s, ws[0].Pid, sts[0], symbolize.New(symbolize.Options{DebugDirs: []string{}})), "exc")
	if !slices.Equal(got, want) {
		t.Errorf("frames %q, gdb's %q", got, want)
	}
}

// TestUnwindNeverGarbage: a program points its saved frame pointer at
// ASCII text before writing. Walked by tables, the stack ends where the
// text would be read as a return address, flagged user-truncated; by
// frame pointers, the same (the text is cut off). No frame is outside the
// process's modules (it printed as [kernel]+0x696c0a3120656e69), and the
// end is counted.
func TestUnwindNeverGarbage(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	bin := filepath.Join(dir, "smash")
	buildProg(t, "gcc", "testdata/unwind/smash.c", bin, "-O0", "-fno-omit-frame-pointer")
	for _, walk := range []backend.StackWalk{backend.WalkTables, backend.WalkFramePointers} {
		out := filepath.Join(dir, "out")
		s := unwindTrace(t, walk, bin, out)
		ws, sts := writesTo(t, s, out, 1)
		st := sts[0]
		if st.Flags&event.FactUserTruncated == 0 {
			t.Errorf("walk %d: stack %+v not flagged user-truncated", walk, st)
		}
		frames := userFrames(s, ws[0].Pid, st, symbolize.New(symbolize.Options{DebugDirs: []string{}}))
		for i, f := range frames {
			if f.Module == "" || f.Module == "[kernel]" {
				t.Errorf("walk %d: frame %d (%#x) outside the process's modules: %+v", walk, i, st.User[i], f)
			}
		}
		if got := frameKeys(frames, "smash"); len(got) == 0 || got[len(got)-1] != "main" {
			t.Errorf("walk %d: frames %q, want them to end at main", walk, got)
		}
		var ended uint64
		for _, c := range s.trailer.Stats.Counters {
			if strings.HasPrefix(c.Name, "user stacks ended early (user-truncated): ") {
				ended += c.Value
			}
		}
		if ended == 0 {
			t.Errorf("walk %d: no stack counted as ended early: %+v", walk, s.trailer.Stats)
		}
	}
}

// TestUnwindCopyPath: a library loaded with dlopen (its table not loaded
// before it runs) writes twice, 0.5 s apart: the first write's stack is
// walked from a copy in user space, the second by the kernel once the
// table is loaded; both are complete and are one stack fact.
func TestUnwindCopyPath(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	lib, bin := filepath.Join(dir, "libdl.so"), filepath.Join(dir, "dl")
	buildProg(t, "gcc", "testdata/unwind/dllib.c", lib, "-O2", "-shared", "-fPIC")
	buildProg(t, "gcc", "testdata/unwind/dl.c", bin, "-O2")
	out := filepath.Join(dir, "out")
	s := unwindTrace(t, backend.WalkTables, bin, lib, out)
	ws, sts := writesTo(t, s, out, 2)
	if sts[0].Handle != sts[1].Handle || sts[0].Flags != 0 {
		t.Errorf("stacks %d and %d, flags %v: want one complete stack", sts[0].Handle, sts[1].Handle, sts[0].Flags)
	}
	got := frameKeys(userFrames(s, ws[0].Pid, sts[0], symbolize.New(symbolize.Options{DebugDirs: []string{}})), "libdl.so")
	for _, fn := range []string{"dllib_leaf", "dllib_write"} {
		if !slices.Contains(got, fn) {
			t.Errorf("frames %q lack %s", got, fn)
		}
	}
	if n := s.trailer.Stats.Get(event.CountInfo, copiesWalked); n == 0 {
		t.Errorf("no stack walked from a copy: %+v", s.trailer.Stats)
	}
}

// TestUnwindSystemPrograms: git status (C, no frame pointers) and
// python3 reading a file (its interpreter's C, no frame pointers) have
// every user stack walked to its outermost frame, through libc's
// __libc_start_call_main (main's caller): no stack flagged, none ended
// early.
func TestUnwindSystemPrograms(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	repo := t.TempDir()
	gitBin := testenv.Tool(t, "git")
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=a@b", "-c", "user.name=n", "commit", "-q", "--allow-empty", "-m", "x"}} {
		cmd := exec.Command(gitBin, append([]string{"-C", repo}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, b)
		}
	}
	file := filepath.Join(repo, "f")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	python := "/usr/bin/python3" // Debian's, not another on PATH (pyenv)
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s: %v (scripts/setup installs python3)", python, err)
	}
	// A link to python3.11: its module is named by the file's own path.
	pythonFile, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		path string   // a file the program reads
		prog string   // the program's file
		want []string // functions its stack holds, from the program's symbol table
	}{
		{"git", []string{gitBin, "-C", repo, "status", "--porcelain"}, filepath.Join(repo, ".git", "HEAD"), "git", nil},
		{"python3", []string{python, "-c", "open('" + file + "').read()"}, file, filepath.Base(pythonFile), []string{"_PyEval_EvalFrameDefault", "PyRun_SimpleStringFlags", "Py_RunMain", "Py_BytesMain"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := unwindTrace(t, backend.WalkTables, c.args...)
			var checked int
			for i := range s.events {
				e := &s.events[i]
				if e.Stack == 0 {
					continue
				}
				st := stackOf(t, s, e)
				if st.Flags != 0 {
					t.Errorf("%s %s: stack %d flagged %v", e.Native, e.Path, st.Handle, st.Flags)
				}
				checked++
			}
			reads := find(s.events, byPath(c.path))
			if checked == 0 || len(reads) == 0 {
				t.Fatalf("%d stacks, %d events on %s", checked, len(reads), c.path)
			}
			sym := symbolize.New(symbolize.Options{DebugDirs: []string{}})
			frames := userFrames(s, reads[0].Pid, stackOf(t, s, &reads[0]), sym)
			var names []string
			for _, f := range frames {
				names = append(names, f.Function)
			}
			for _, fn := range c.want {
				if !slices.Contains(names, fn) {
					t.Errorf("stack of %s on %s: %q lacks %s", reads[0].Native, c.path, names, fn)
				}
			}
			// libc's __libc_start_main calls __libc_start_call_main (not
			// in its symbol table), which calls the program's main.
			k := slices.Index(names, "__libc_start_main")
			if k < 2 || frames[k-1].Module != "libc.so.6" || frames[k-2].Module != c.prog {
				t.Errorf("stack of %s on %s: %q (%v): want the program's main's frame, then libc's __libc_start_call_main and __libc_start_main",
					reads[0].Native, c.path, names, frameKeys(frames, ""))
			}
			t.Logf("%d stacks checked; %s's: %q", checked, reads[0].Native, names)
		})
	}
}
