//go:build linux && (amd64 || arm64)

package ptrace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// The equivalence test runs a workload once, traced by both backends at
// the same time: the ptrace backend inside a copy of this test binary run
// as the unprivileged user nobody (TestUnprivilegedWorkload), the eBPF
// backend here, as root, following that process. The two traces must
// hold the same calls: equal counts and bytes per call and per op, the
// same opens of the same absolute paths.

// Environment of the unprivileged side.
const (
	envWorkload = "IOTRACE_PTRACE_WORKLOAD" // the shell command
	envOut      = "IOTRACE_PTRACE_OUT"      // where its events go (JSON)
)

// callEvent is what the comparison looks at in an event.
type callEvent struct {
	Pid    uint32
	Native string
	Op     string
	Path   string
	Bytes  int64
	Status string
}

// TestUnprivilegedWorkload is the unprivileged side of
// TestEquivalenceWithEBPF (it does nothing unless that test runs it): it
// traces the workload with the ptrace backend and writes its events.
func TestUnprivilegedWorkload(t *testing.T) {
	wl, out := os.Getenv(envWorkload), os.Getenv(envOut)
	if wl == "" || out == "" {
		t.Skip("run by TestEquivalenceWithEBPF")
	}
	if os.Geteuid() == 0 {
		t.Fatal("running as root: this side must be unprivileged")
	}
	s, status := trace(t, context.Background(), backend.Options{CommandStdout: io.Discard}, "sh", "-c", wl)
	if status != 0 {
		t.Fatalf("workload %q: status %d", wl, status)
	}
	for _, c := range s.trailer.Stats.Counters {
		if c.Kind == event.CountUnresolved && c.Value != 0 || c.Kind == event.CountLost || c.Kind == event.CountUnpaired {
			t.Errorf("%v: %s: %d", c.Kind, c.Name, c.Value)
		}
	}
	var evs []callEvent
	for _, e := range s.events {
		evs = append(evs, callEvent{e.Pid, e.Native, e.Op.String(), e.Path, e.Bytes, e.Status.String()})
	}
	b, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEquivalenceWithEBPF: the workloads of the eBPF backend's strace
// comparison (a make build, git status, sqlite3) and python, each traced
// by both backends in the same run, give equal per-call and per-op
// counts and bytes on the file layer, and the same opens.
func TestEquivalenceWithEBPF(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs, and runs the ptrace side as nobody")
	for _, tool := range []string{"runuser", "make", "gcc", "git", "sqlite3", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed (scripts/setup installs it)", tool)
		}
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	src, err := filepath.Abs("../ebpf/testdata/cproj")
	if err != nil {
		t.Fatal(err)
	}
	// A directory nobody can enter, holding a copy of this binary.
	base, err := os.MkdirTemp("", "iotrace-ptrace-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "ptrace.test")
	copyFile(t, os.Args[0], bin)

	for _, wl := range []struct{ name, setup, run string }{
		{"make", "cp " + src + "/* .", "make -s"},
		{"git status", "git init -q r && cd r && echo a > a && git add a && " +
			"git -c user.name=t -c user.email=t@t commit -qm a && echo b > b && git status --porcelain",
			"cd r && git status --porcelain"},
		{"sqlite3", "sqlite3 db 'create table t(x)'",
			"sqlite3 db 'insert into t values(1); insert into t values(2); insert into t values(3); select count(*) from t;'"},
		{"python", "true", "/usr/bin/python3 -B -c 'import json; open(\"f\", \"w\").write(\"x\" * 100000); print(len(json.dumps(open(\"f\").read())))'"},
	} {
		t.Run(wl.name, func(t *testing.T) {
			dir := filepath.Join(base, strings.ReplaceAll(wl.name, " ", "-"))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, uid, gid); err != nil {
				t.Fatal(err)
			}
			setup := exec.Command("runuser", "-u", "nobody", "--", "sh", "-c", wl.setup)
			setup.Dir = dir
			setup.Env = append(os.Environ(), "HOME="+dir)
			if out, err := setup.CombinedOutput(); err != nil {
				t.Fatalf("setup: %v\n%s", err, out)
			}
			ptraceEvents, ebpfEvents := runBoth(t, bin, dir, wl.run)
			compareTraces(t, ptraceEvents, ebpfEvents)
		})
	}
}

// runBoth runs the workload as nobody under the ptrace backend while the
// eBPF backend traces it, and returns both traces' events (the eBPF
// trace's only for the ptrace trace's processes, from their command's
// exec on).
func runBoth(t *testing.T, bin, dir, run string) (pt, eb []callEvent) {
	t.Helper()
	out := filepath.Join(dir, "ptrace-events.json")
	// The traced pid is a root shell that forks nothing before "go" (then
	// execs runuser): a runuser started at once forks its child before
	// the eBPF backend attaches, and that child would not be followed.
	cmd := exec.Command("sh", "-c",
		`read x && exec runuser -u nobody -- "$0" -test.run='^TestUnprivilegedWorkload$' -test.count=1`, bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, envWorkload+"="+run, envOut+"="+out)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	sink := &memSink{}
	ready := make(chan struct{})
	sink.onFact = func(f *event.Fact) {
		if f.Rundown && f.Pid == pid && ready != nil {
			close(ready)
			ready = nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- ebpf.New(ebpf.Config{MarkerDir: "-"}).Run(ctx, backend.Options{Pids: []uint32{pid}, FollowChildren: true,
			Layers: []event.Layer{event.LayerFile}, Warn: func(m string) { t.Logf("ebpf: %s", m) }}, sink)
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("eBPF backend: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("eBPF backend not ready in 60 s")
	}
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("eBPF backend: %v", err)
	}
	if werr != nil {
		t.Fatalf("unprivileged side: %v\n%s", werr, logs.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("unprivileged side wrote no events: %v\n%s", err, logs.String())
	}
	if err := json.Unmarshal(b, &pt); err != nil {
		t.Fatal(err)
	}
	if len(pt) == 0 {
		t.Fatal("the ptrace trace is empty")
	}
	pids := map[uint32]bool{}
	for _, e := range pt {
		pids[e.Pid] = true
	}
	root := pt[0].Pid // the helper, which becomes the command at its exec
	// The helper is this binary exec'd again (its own execve and Go
	// start-up come first): the eBPF trace of root starts at the execve
	// of the command, the first that the ptrace trace holds.
	cmdPath := ""
	for _, e := range pt {
		if e.Pid == root && e.Native == "execve" {
			cmdPath = e.Path
			break
		}
	}
	if cmdPath == "" {
		t.Fatalf("the ptrace trace has no execve of its command: %+v", pt[0])
	}
	execd := false
	for _, e := range sink.events {
		if !pids[e.Pid] || e.Layer != event.LayerFile {
			continue
		}
		if e.Pid == root && !execd {
			if execd = e.Native == "execve" && e.Path == cmdPath; !execd {
				continue // the helper before its exec: not traced by ptrace
			}
		}
		eb = append(eb, callEvent{e.Pid, e.Native, e.Op.String(), e.Path, e.Bytes, e.Status.String()})
	}
	return pt, eb
}

// compareTraces checks per-call and per-op counts and bytes, and the
// opens by path.
func compareTraces(t *testing.T, pt, eb []callEvent) {
	t.Helper()
	type tally struct{ n, bytes int64 }
	count := func(evs []callEvent, key func(callEvent) string) map[string]tally {
		m := map[string]tally{}
		for _, e := range evs {
			k := key(e)
			x := m[k]
			x.n++
			x.bytes += e.Bytes
			m[k] = x
		}
		return m
	}
	for _, by := range []struct {
		name string
		key  func(callEvent) string
	}{
		{"call", func(e callEvent) string { return e.Native }},
		{"op", func(e callEvent) string { return e.Op }},
		{"open", func(e callEvent) string {
			if e.Op != "open" || strings.Contains(e.Path, ":[") {
				return "-" // not an open of a path (pipes, sockets: inode names)
			}
			return fmt.Sprintf("%s %s %s", e.Native, e.Path, e.Status)
		}},
	} {
		p, b := count(pt, by.key), count(eb, by.key)
		keys := map[string]bool{}
		for k := range p {
			keys[k] = true
		}
		for k := range b {
			keys[k] = true
		}
		var diffs []string
		for k := range keys {
			if p[k] != b[k] {
				diffs = append(diffs, fmt.Sprintf("%s %q: ptrace %d calls %d bytes, eBPF %d calls %d bytes", by.name, k, p[k].n, p[k].bytes, b[k].n, b[k].bytes))
			}
		}
		sort.Strings(diffs)
		for _, d := range diffs {
			t.Error(d)
		}
	}
	t.Logf("%d events in each trace", len(pt))
}

// copyFile copies src to dst, 0755.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
