//go:build linux && (amd64 || arm64)

package ptrace

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"github.com/iotrace/iotrace/event"
)

// Lines of strace -f -o: a call (pid, name, arguments, result), or its
// first half when another process's call came between (unfinished) and
// its second half (resumed, with the result).
var (
	straceLine       = regexp.MustCompile(`^(\d+) +([a-z0-9_]+)\((.*)\) += (-?\d+)`)
	straceUnfinished = regexp.MustCompile(`^(\d+) +([a-z0-9_]+)\((.*) <unfinished \.\.\.>$`)
	straceResumed    = regexp.MustCompile(`^(\d+) +<\.\.\. ([a-z0-9_]+) resumed>.*\) += (-?\d+)`)
)

// tally counts calls and their bytes by name.
type tally map[string][2]int64

func (t tally) add(name string, bytes int64) {
	x := t[name]
	x[0]++
	x[1] += bytes
	t[name] = x
}

// straceTally counts the calls of an strace output as the backend
// records them: traced calls only, file-backed mmaps, fcntl's dup and
// lock commands, the bytes of the calls whose result is a byte count.
func straceTally(t *testing.T, path string) tally {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := tally{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	unfinished := map[string]string{} // pid → arguments
	for sc.Scan() {
		line := sc.Text()
		if m := straceUnfinished.FindStringSubmatch(line); m != nil {
			unfinished[m[1]] = m[3]
			continue
		}
		m := straceLine.FindStringSubmatch(line)
		if r := straceResumed.FindStringSubmatch(line); r != nil {
			m = []string{line, r[1], r[2], unfinished[r[1]], r[3]}
		}
		if m == nil {
			continue
		}
		name, args := m[2], strings.Split(m[3], ", ")
		row := systable.Lookup(systable.ByName(name))
		if row == nil || row.Kernel&(systable.AsyncSubmit|systable.AsyncReap|systable.AsyncRingEnter) != 0 {
			continue
		}
		switch {
		case name == "mmap" && (len(args) < 5 || strings.Contains(args[3], "MAP_ANONYMOUS") || strings.HasPrefix(args[4], "-")):
			continue
		case name == "fcntl" && (len(args) < 2 || !(strings.HasPrefix(args[1], "F_DUPFD") || strings.Contains(args[1], "LK"))):
			continue
		}
		var bytes int64
		if ret, _ := strconv.ParseInt(m[4], 10, 64); row.Ret == systable.RetBytes && ret > 0 {
			bytes = ret
		}
		out.add(name, bytes)
	}
	return out
}

// TestSameAsStrace runs deterministic workloads (a make build from
// clean, sqlite3 inserts into a new database, python writing and reading
// a file) once under strace and once under the backend, each in a fresh
// directory, and checks equal counts and bytes per call. It needs no
// privilege: CI runs it, and so does any user.
func TestSameAsStrace(t *testing.T) {
	for _, tool := range []string{"strace", "make", "gcc", "sqlite3", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed (scripts/setup installs it)", tool)
		}
	}
	src, err := filepath.Abs("../ebpf/testdata/cproj")
	if err != nil {
		t.Fatal(err)
	}
	for _, wl := range []struct{ name, setup, run string }{
		{"make", "cp " + src + "/* .", "make -s"},
		{"sqlite3", "true", "sqlite3 db 'create table t(x); insert into t values(1); insert into t values(2); select count(*) from t;'"},
		{"python", "true", "/usr/bin/python3 -B -S -c 'open(\"f\", \"w\").write(\"x\" * 100000); print(len(open(\"f\").read()))'"},
	} {
		t.Run(wl.name, func(t *testing.T) {
			dirs := [2]string{t.TempDir(), t.TempDir()}
			for _, d := range dirs {
				c := exec.Command("sh", "-c", wl.setup)
				c.Dir = d
				if out, err := c.CombinedOutput(); err != nil {
					t.Fatalf("setup: %v\n%s", err, out)
				}
			}
			out := filepath.Join(t.TempDir(), "strace.txt")
			st := exec.Command("strace", "-f", "-qq", "-o", out, "--", "sh", "-c", `cd "$0" && `+wl.run, dirs[0])
			if o, err := st.CombinedOutput(); err != nil {
				t.Fatalf("strace: %v\n%s", err, o)
			}
			want := straceTally(t, out)
			s, status := trace(t, context.Background(), backend.Options{CommandStdout: os.Stderr}, "sh", "-c", `cd "$0" && `+wl.run, dirs[1])
			if status != 0 {
				t.Fatalf("status %d", status)
			}
			got := tally{}
			for _, e := range s.events {
				if e.Layer == event.LayerFile {
					got.add(e.Native, max(e.Bytes, 0))
				}
			}
			for name := range want {
				if got[name] != want[name] {
					t.Errorf("%s: ptrace backend %d calls %d bytes, strace %d calls %d bytes", name, got[name][0], got[name][1], want[name][0], want[name][1])
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%s: ptrace backend %d calls, strace none", name, got[name][0])
				}
			}
		})
	}
}
