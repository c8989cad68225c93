package ebpf

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// straceClasses is what the comparison asks strace for: its file and
// descriptor classes plus the flushes and descriptor-creating calls
// outside them.
const straceClasses = "%file,%desc,sync,syncfs,msync,socket,socketpair,accept,accept4"

var straceLine = regexp.MustCompile(`^(\d+) +([a-z0-9_]+)\((.*)`)

// straceCounts counts the calls of straceOut by name, as iotrace would
// see them: file-backed mmaps only, fcntl dup and lock commands only
// (F_SETFD changes a flag and is not an event). It returns the pids seen.
// root is the pid of the first line: strace's own child, which makes a few
// calls before its exec that strace does not show.
func straceCounts(t *testing.T, path string) (counts map[string]int, pids map[uint32]bool, root uint32) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts, pids = map[string]int{}, map[uint32]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		m := straceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		pids[uint32(pid)] = true
		if root == 0 {
			root = uint32(pid)
		}
		name, args := m[2], m[3]
		switch name {
		case "mmap":
			a := strings.Split(args, ", ")
			if len(a) < 5 || strings.Contains(a[3], "MAP_ANONYMOUS") || strings.HasPrefix(a[4], "-") {
				continue
			}
		case "fcntl":
			a := strings.Split(args, ", ")
			if len(a) < 2 || !(strings.HasPrefix(a[1], "F_DUPFD") || strings.Contains(a[1], "LK")) {
				continue
			}
		}
		counts[name]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return counts, pids, root
}

// TestStraceCompare runs workloads under strace while iotrace traces the
// same run, and checks that iotrace reports every traced call exactly as
// often as strace, that every call strace shows is traced or in Untraced,
// and that the trace names every descriptor and path (a gcc build once
// left 149 unresolved).
func TestStraceCompare(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	for _, tool := range []string{"strace", "make", "gcc", "git", "sqlite3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" || testenv.Required() {
				t.Fatalf("%s not installed (scripts/setup installs it)", tool)
			}
			t.Skipf("%s not installed (scripts/setup installs it)", tool)
		}
	}
	traced := map[string]bool{}
	for _, s := range SyscallNames() {
		traced[s.Name] = true
	}
	src, err := filepath.Abs("testdata/cproj")
	if err != nil {
		t.Fatal(err)
	}
	for _, wl := range []struct{ name, setup, run string }{
		{"make", "cp " + src + "/* .", "make -s"},
		{"git status", "git init -q r && cd r && echo a > a && git add a && " +
			"git -c user.name=t -c user.email=t@t commit -qm a && echo b > b",
			"cd r && git status --porcelain"},
		{"sqlite3", "sqlite3 db 'create table t(x)'",
			"sqlite3 db 'insert into t values(1); insert into t values(2); insert into t values(3); select count(*) from t;'"},
	} {
		t.Run(wl.name, func(t *testing.T) {
			dir := t.TempDir()
			// Setup runs before tracing; the traced part runs under
			// strace once the tracer is ready.
			setup, run := wl.setup, wl.run
			cmd := exec.Command("sh", "-c", setup)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("setup: %v\n%s", err, out)
			}
			out := filepath.Join(t.TempDir(), "strace.txt")
			sh := exec.Command("sh", "-c", `read x && exec strace -f -qq -o "$0" -e trace=`+straceClasses+` -- sh -c "$1"`, out, run)
			sh.Dir = dir
			in, err := sh.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			sh.Stderr = os.Stderr // stdout (git status, the count) is not needed
			if err := sh.Start(); err != nil {
				t.Fatal(err)
			}
			pid := uint32(sh.Process.Pid)
			sink, ready, stop := runTrace(t, backend.Options{Pids: []uint32{pid}, FollowChildren: true,
				Layers: []event.Layer{event.LayerFile}}, pid)
			<-ready
			if _, err := in.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			if err := sh.Wait(); err != nil {
				t.Fatalf("workload: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			want, pids, root := straceCounts(t, out)
			got := map[string]int{}
			execd := false
			for i := range sink.events {
				e := &sink.events[i]
				if e.Pid == root && !execd {
					if execd = e.Native == "execve"; !execd {
						continue // before strace's exec: strace does not show it
					}
				}
				if pids[e.Pid] && e.Layer == event.LayerFile {
					got[e.Native]++
				}
			}
			if len(want) == 0 {
				t.Fatal("strace saw no call")
			}
			for name, n := range want {
				if !traced[name] {
					if Untraced[name] == "" {
						t.Errorf("%s: strace shows %d calls; iotrace neither traces it nor lists it in Untraced", name, n)
					}
					continue
				}
				if got[name] != n {
					t.Errorf("%s: iotrace %d, strace %d", name, got[name], n)
				}
			}
			for name, n := range got {
				if want[name] == 0 {
					t.Errorf("%s: iotrace %d, strace none", name, n)
				}
			}
			checkResolved(t, sink)
		})
	}
}

// checkResolved fails when the trace counts an unresolved descriptor or
// path, and names for the first events whose descriptor has no name the
// open that made the descriptor in their process, when the trace has one.
func checkResolved(t *testing.T, sink *memSink) {
	t.Helper()
	if sink.trailer == nil {
		t.Fatal("no trailer")
	}
	for _, c := range sink.trailer.Stats.Counters {
		if c.Kind == event.CountUnresolved && c.Value != 0 {
			t.Errorf("unresolved: %s: %d", c.Name, c.Value)
		}
	}
	type key struct {
		pid uint32
		fd  int32
	}
	made := map[key]*event.Event{} // the last open of each descriptor
	shown := 0
	for i := range sink.events {
		e := &sink.events[i]
		if e.Layer != event.LayerFile {
			continue
		}
		if e.FD >= 0 && e.Path == "" && shown < 20 {
			shown++
			if m := made[key{e.Pid, e.FD}]; m != nil {
				t.Errorf("pid %d %s fd %d: no name; made by %s (%q) = %v", e.Pid, e.Native, e.FD, m.Native, m.Path, m.Status)
			} else {
				t.Errorf("pid %d %s fd %d: no name; not opened by that process in the trace (inherited or dup'ed)", e.Pid, e.Native, e.FD)
			}
		}
		if e.Status == event.StatusOK && e.Op == event.OpOpen {
			made[key{e.Pid, e.FD}] = e
		}
	}
}
