package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/crafted"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/symbolize/pdb"
)

// childRun is one run of the CLI as a process of its own.
type childRun struct {
	stdout, stderr string
	code           int
	rss            int64         // peak resident memory, bytes
	cpu            time.Duration // user and system time
	wall           time.Duration
	// interrupted is when SIGINT was sent (0: never), exited how long
	// after it the process ended.
	interrupted, exited time.Duration
}

// runChild runs the CLI with args as a child process; after interruptAt
// (when > 0) it sends SIGINT. A run still going after limit is killed
// and fails the test.
func runChild(t *testing.T, limit, interruptAt time.Duration, args ...string) childRun {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	peak := filepath.Join(t.TempDir(), "peak")
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", childPeakEnv+"="+peak)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var r childRun
	var sigAt <-chan time.Time
	if interruptAt > 0 {
		sigAt = time.After(interruptAt)
	}
	kill := time.After(limit)
wait:
	for {
		select {
		case <-done:
			break wait
		case <-sigAt:
			r.interrupted = time.Since(t0)
			cmd.Process.Signal(os.Interrupt)
		case <-kill:
			cmd.Process.Kill()
			<-done
			t.Fatalf("iotrace %s: still running after %v: killed\nstderr: %s", strings.Join(args, " "), limit, errb.String())
		}
	}
	r.wall = time.Since(t0)
	if r.interrupted > 0 {
		r.exited = r.wall - r.interrupted
	}
	r.stdout, r.stderr, r.code = out.String(), errb.String(), cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	// Not the rusage's peak: it counts the test process's memory the
	// child had before it ran the test binary again.
	if b, err := os.ReadFile(peak); err == nil {
		r.rss, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	return r
}

// Targets for every crafted input (issue 25).
const (
	craftedMaxRSS = 100 << 20
	craftedMaxCPU = 2 * time.Second
)

// readingCommands are the commands that name a trace's frames.
func readingCommands(trace, out string, extra ...string) [][]string {
	return [][]string{
		append([]string{"print", "--stacks", trace}, extra...),
		append([]string{"report", "--stacks", trace}, extra...),
		append([]string{"convert", "-f", "pprof", trace, "-o", out + ".pprof"}, extra...),
		append([]string{"convert", "-f", "folded", trace, "-o", out + ".folded"}, extra...),
	}
}

// TestCraftedInputs: each hostile input of issue 25 — a trace with facts
// built to cost what it does not hold, symbol files whose sizes claim
// what they do not hold, identities that would name paths — read by
// every command that names frames, within 100 MB and 2 s of CPU each,
// never hanging, the problem said in the summary.
func TestCraftedInputs(t *testing.T) {
	dir := testenv.TempDir(t)
	path := func(n string) string { return filepath.Join(dir, n) }
	if err := syscall.Mkfifo(path("fifo.so"), 0o600); err != nil {
		t.Skipf("skipped: mkfifo: %v", err)
	}
	// FIFOs where the escaping identities lead.
	for _, n := range []string{"x.debug", "x", "y"} {
		if err := syscall.Mkfifo(path(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	syms := path("a/b/c/syms")
	if err := os.MkdirAll(syms, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := crafted.SparseELF(path("sparse.so"), 2<<30); err != nil {
		t.Fatal(err)
	}
	// A PDB of 224 KB claiming 1 GiB, in symbol-store layout.
	guid, age := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint32(1)
	key := pdb.SymStoreKey(guid, age)
	if err := os.MkdirAll(filepath.Join(syms, "big.pdb", key), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(syms, "big.pdb", key, "big.pdb"), crafted.RepeatedBlockMSF(32768, 1<<30), 0o600); err != nil {
		t.Fatal(err)
	}
	const gnu = "gnu:0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name  string
		trace *crafted.Trace
		args  []string
		say   string // in the problem summary
		// decoded: the trace's own decoding takes about the target
		// (the reader makes a stack's addresses before any command
		// names them): naming its frames may add up to 16 MB to
		// reading it without them.
		decoded bool
	}{
		{"identity gnu:../", crafted.ModuleTrace("/opt/lib.so", "gnu:../../../../x", 10, 3), []string{"--symbols", syms}, "module identity not valid", false},
		{"identity pdb:../", crafted.ModuleTrace(`C:\app\evil.dll`, "pdb:evil.pdb/../../../../../y", 10, 3), []string{"--symbols", syms}, "module identity not valid", false},
		{"module path a FIFO", crafted.ModuleTrace(path("fifo.so"), gnu, 10, 3), nil, "could not be read", false},
		{"sparse ELF of 2 GiB", crafted.ModuleTrace(path("sparse.so"), gnu, 10, 3), nil, "could not be read", false},
		{"PDB claiming 1 GiB", crafted.ModuleTrace(`C:\app\big.dll`, "pdb:big.pdb/"+key, 10, 3), []string{"--symbols", syms}, "could not be read", false},
		{"1,000 facts between 1,000 events", crafted.ChurnTrace(10_000, 1000), nil, "", false},
		{"a stack of 4 M frames", crafted.ModuleTrace("/opt/app", gnu, 4<<20, 2), nil, "", true},
	}
	for i, c := range cases {
		trace := path("trace" + string(rune('a'+i)) + ".iot")
		if err := c.trace.Write(trace); err != nil {
			t.Fatal(err)
		}
		maxRSS := int64(craftedMaxRSS)
		if c.decoded {
			plain := runChild(t, 60*time.Second, 0, "print", trace, "-o", trace+".txt")
			maxRSS = max(maxRSS, plain.rss+16<<20)
		}
		for _, args := range readingCommands(trace, trace+".out", c.args...) {
			r := runChild(t, 60*time.Second, 0, args...)
			what := c.name + ": iotrace " + strings.Join(args[:2], " ")
			if r.code != 0 {
				t.Errorf("%s: exit %d: %s", what, r.code, r.stderr)
			}
			if r.rss > maxRSS || r.cpu > craftedMaxCPU {
				t.Errorf("%s: %d MB, %v of CPU (%v), want under %d MB and %v", what, r.rss>>20, r.cpu, r.wall, maxRSS>>20, craftedMaxCPU)
			}
			if c.say != "" && args[0] != "convert" && !strings.Contains(r.stdout+r.stderr, c.say) {
				t.Errorf("%s: the summary does not say %q:\n%s\n%s", what, c.say, r.stdout, r.stderr)
			}
		}
	}
}

// TestInterruptNamedFIFO: a trace naming a FIFO as its module (issue 25,
// item 2: the open blocked for good, SIGINT and SIGTERM did nothing)
// is read to its end, or stops within a second of SIGINT.
func TestInterruptNamedFIFO(t *testing.T) {
	dir := testenv.TempDir(t)
	fifo := filepath.Join(dir, "lib.so")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("skipped: mkfifo: %v", err)
	}
	trace := filepath.Join(dir, "t.iot")
	if err := crafted.ModuleTrace(fifo, "gnu:0123456789abcdef0123456789abcdef01234567", 4, 2).Write(trace); err != nil {
		t.Fatal(err)
	}
	r := runChild(t, 20*time.Second, 500*time.Millisecond, "print", "--stacks", trace)
	if r.interrupted > 0 && r.exited > time.Second {
		t.Errorf("exited %v after SIGINT", r.exited)
	}
	if !strings.Contains(r.stdout, "lib.so+0x") {
		t.Errorf("exit %d, frames not printed:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestRunMemoryWithinAStep: the scripts of issue 25 (item 7) that passed
// --max-memory within one step end with the script error (exit 1) and
// the limit's message, within the limit: s.replace("a", s) on 32 KiB and
// 128 KiB strings (1 GiB and 16 GiB asked for), "".join([s] * 48).
func TestRunMemoryWithinAStep(t *testing.T) {
	in := writeJSONL(t, resolvedTrace("linux"))
	dir := testenv.TempDir(t)
	for i, src := range []string{
		"s = \"a\" * (32 << 10)\ndef on_event(e):\n    x = s.replace(\"a\", s)\n",
		"s = \"a\" * (128 << 10)\ndef on_event(e):\n    x = s.replace(\"a\", s)\n",
		"s = \"a\" * (16 << 20)\ndef on_event(e):\n    x = \"\".join([s] * 48)\n",
	} {
		script := filepath.Join(dir, "s"+strconv.Itoa(i)+".star")
		if err := os.WriteFile(script, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runChild(t, 60*time.Second, 0, "run", script, "--input", in, "--max-memory", "100M")
		if r.code != 1 || !strings.Contains(r.stderr, "memory limit exceeded") {
			t.Errorf("script %d: exit %d: %s", i, r.code, r.stderr)
		}
		if r.rss > 200<<20 {
			t.Errorf("script %d: %d MB resident under --max-memory 100M", i, r.rss>>20)
		}
	}
}
