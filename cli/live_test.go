package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/timeorder"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"": 0, "4096": 4096, "8M": 8 << 20, "512k": 512 << 10, "1GiB": 1 << 30, "16MB": 16 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"x", "-1", "0", "8T"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}

func TestTraceAndRecordArgs(t *testing.T) {
	if _, stderr, code := runCLI(t, "trace", "ls"); code == 0 || !strings.Contains(stderr, "after --") {
		t.Errorf("trace without --: code %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "record", "--", "true"); code == 0 || !strings.Contains(stderr, "-o FILE.iot") {
		t.Errorf("record without -o: code %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "record", "-o", "x.txt", "--", "true"); code == 0 || !strings.Contains(stderr, ".iot") {
		t.Errorf("record -o x.txt: code %d, %s", code, stderr)
	}
}

// TestRecordThenPrint records a command with the live backend and reads
// the file back.
func TestRecordThenPrint(t *testing.T) {
	testenv.RequirePrivileged(t, "traces with eBPF")
	dir := testenv.TempDir(t)
	data := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(data, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	iot := filepath.Join(dir, "t.iot")
	_, stderr, code := runCLI(t, "record", "-o", iot, "--layer", "file", "--", "sh", "-c", "cat "+data+" > "+filepath.Join(dir, "out.txt"))
	if code != 0 || !strings.Contains(stderr, "events, 0 events lost") {
		t.Fatalf("record: code %d\n%s", code, stderr)
	}
	out, stderr, code := runCLI(t, "print", iot, "--path", data)
	if code != 0 {
		t.Fatalf("print: code %d\n%s", code, stderr)
	}
	for _, want := range []string{"cat[", "openat", data} {
		if !strings.Contains(out, want) {
			t.Errorf("print output lacks %q:\n%s", want, out)
		}
	}
	// cat copies with copy_file_range where it can, else read/write.
	if !strings.Contains(out, " read ") && !strings.Contains(out, "copy_file_range") {
		t.Errorf("print output has neither a read nor a copy_file_range:\n%s", out)
	}
	out, _, code = runCLI(t, "trace", "-f", "jsonl", "--op", "open", "--", "cat", data)
	if code != 0 || !strings.Contains(out, `"`+data+`"`) {
		t.Errorf("trace -f jsonl: code %d\n%s", code, out)
	}
}

// TestCommandExitStatus: like strace, trace and record exit with the
// traced command's status.
func TestCommandExitStatus(t *testing.T) {
	testenv.RequirePrivileged(t, "traces with eBPF")
	if _, stderr, code := runCLI(t, "trace", "--", "sh", "-c", "exit 3"); code != 3 {
		t.Errorf("trace -- sh -c 'exit 3': code %d, want 3\n%s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "trace", "--layer", "file", "--", "true"); code != 0 {
		t.Errorf("trace -- true: code %d, want 0\n%s", code, stderr)
	}
	iot := filepath.Join(testenv.TempDir(t), "t.iot")
	_, stderr, code := runCLI(t, "record", "-o", iot, "--", "sh", "-c", "kill -TERM $$")
	if code != 128+15 || !strings.Contains(stderr, "wrote "+iot) || !strings.Contains(stderr, "sh was killed by SIGTERM (exit status 143)") {
		t.Errorf("record -- sh killed by SIGTERM: code %d, want 143, the file written and the signal named\n%s", code, stderr)
	}
}

// TestTraceKeepsCommandOutputApart: with the trace on stdout, the traced
// command's own output goes to stderr, so that "trace -f jsonl -- CMD |
// jq" reads only the trace; with -o it stays on stdout.
func TestTraceKeepsCommandOutputApart(t *testing.T) {
	testenv.RequirePrivileged(t, "traces with eBPF")
	// The shell computes the marker: the command line holds no "42".
	const marker, echo = "printed-by-the-command-42", "echo printed-by-the-command-$((6*7))"
	out, stderr, code := runCLI(t, "trace", "-f", "jsonl", "--layer", "file", "--", "sh", "-c", echo)
	if code != 0 {
		t.Fatalf("trace: code %d\n%s", code, stderr)
	}
	if strings.Contains(out, marker) || !strings.Contains(stderr, marker) {
		t.Errorf("the command's output is not on stderr:\nstdout %q\nstderr %q", out, stderr)
	}
	readJSONL(t, out) // fails unless stdout is a jsonl trace and nothing else
	_, stderr, code = runCLI(t, "report", "--live", "--format", "json", "--layer", "file", "--", "sh", "-c", echo)
	if code != 0 || !strings.Contains(stderr, marker) {
		t.Errorf("report --live: code %d, the command's output not on stderr: %q", code, stderr)
	}
}

// TestRecordOutputFile: record writes its file 0600 through a temporary
// file renamed at the end, refuses a symlink at the path, and leaves no
// temporary file.
func TestRecordOutputFile(t *testing.T) {
	testenv.RequirePrivileged(t, "traces with eBPF")
	dir := testenv.TempDir(t)
	iot := filepath.Join(dir, "t.iot")
	if _, stderr, code := runCLI(t, "record", "-o", iot, "--layer", "file", "--", "true"); code != 0 {
		t.Fatalf("record: code %d\n%s", code, stderr)
	}
	st, err := os.Stat(iot)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("record output: %v mode %v, want 0600", err, st.Mode().Perm())
	}
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	link := filepath.Join(dir, "link.iot")
	os.Symlink(victim, link)
	if _, stderr, code := runCLI(t, "record", "-o", link, "--", "true"); code == 0 || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("record -o SYMLINK: code %d, want refused\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("record wrote through a symlink: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestTraceInTimeOrder: trace's output goes forward in time (#19): system
// calls are emitted at their exit with the time of their enter and block
// events come from another ring buffer, so without reordering the times
// go backwards; an event that came too late for the window is counted in
// the footer, and only those may go backwards.
func TestTraceInTimeOrder(t *testing.T) {
	testenv.RequirePrivileged(t, "traces with eBPF")
	dir := testenv.TempDir(t)
	f := filepath.Join(dir, "f")
	script := "dd if=/dev/zero of=" + f + " bs=64k count=64 oflag=direct status=none; " +
		"for i in 1 2 3 4 5 6 7 8; do cat " + f + " > /dev/null & done; wait; " +
		"dd if=" + f + " of=/dev/null bs=4k iflag=direct status=none"
	out, stderr, code := runCLI(t, "trace", "-f", "jsonl", "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("trace: code %d\n%s", code, stderr)
	}
	var last int64
	var back, events int
	late := 0
	for _, l := range strings.Split(out, "\n") {
		var rec struct {
			Type     string `json:"type"`
			Time     *int64 `json:"time"`
			Counters []struct {
				Name  string `json:"name"`
				Value int    `json:"value"`
			} `json:"counters"`
		}
		if l == "" || json.Unmarshal([]byte(l), &rec) != nil {
			continue
		}
		for _, c := range rec.Counters {
			if c.Name == timeorder.StatLate {
				late = c.Value
			}
		}
		if rec.Type != "event" || rec.Time == nil {
			continue
		}
		events++
		if *rec.Time < last {
			back++
		}
		if *rec.Time > last {
			last = *rec.Time
		}
	}
	if events < 100 {
		t.Fatalf("%d events traced:\n%s", events, stderr)
	}
	if back > late {
		t.Errorf("%d of %d events go back in time, %d counted as late", back, events, late)
	}
}

// TestTraceStartsAtExec: trace -- CMD shows the command from its exec on,
// never iotrace's own set-up of it (the dup3 of its standard output by
// the forked child, still named "iotrace").
func TestTraceStartsAtExec(t *testing.T) {
	testenv.RequirePrivileged(t, "traces with eBPF")
	out, stderr, code := runCLI(t, "trace", "-f", "jsonl", "--layer", "file", "--", "sh", "-c", "exec cat /dev/null")
	if code != 0 {
		t.Fatalf("trace: code %d\n%s", code, stderr)
	}
	first := ""
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, `"type":"event"`) {
			continue
		}
		if strings.Contains(line, `"comm":"iotrace"`) {
			t.Errorf("an event of iotrace itself: %s", line)
		}
		if first == "" {
			first = line
		}
	}
	if !strings.Contains(first, `"op":"exec"`) {
		t.Errorf("first event %s, want the command's exec", first)
	}
}
