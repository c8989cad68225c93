package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// TestOutputNeverOverInput: every command that reads and writes refuses
// an output that is one of its inputs, by file identity (a hard link or
// another spelling of the name counts), and leaves the input intact.
func TestOutputNeverOverInput(t *testing.T) {
	in := writeJSONL(t, resolvedTrace("linux"))
	orig, _ := os.ReadFile(in)
	link := filepath.Join(filepath.Dir(in), "other-name.jsonl")
	if err := os.Link(in, link); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(testenv.TempDir(t), "s.star")
	os.WriteFile(script, []byte("def on_event(e):\n    print(e.op)\n"), 0o600)
	for _, args := range [][]string{
		{"print", in, "-o", in},
		{"print", in, "-o", link},
		{"print", in, "-f", "jsonl", "-o", filepath.Dir(in) + "/./trace.jsonl"},
		{"convert", in, "-o", link, "-f", "jsonl"},
		{"run", script, "--input", in, "-o", link},
		{"run", script, "--input", in, "-o", script},
		{"report", in, "--heatmap", link},
		{"report", in, "-o", link},
		{"report", "--merge", in, "-o", in},
		{"compare", in, in, "-o", link},
	} {
		out, errOut, code := runCLI(t, args...)
		if code == 0 || !strings.Contains(errOut, "same file as the input") {
			t.Errorf("%v: exit %d, stderr %q; want refused", args, code, errOut)
		}
		if args[0] == "report" && slices.Contains(args, "--heatmap") && out != "" {
			t.Errorf("report read the trace before refusing its heatmap file:\n%.300s", out)
		}
		if got, _ := os.ReadFile(in); string(got) != string(orig) {
			t.Fatalf("%v changed the input (%d bytes, was %d)", args, len(got), len(orig))
		}
	}
}

// TestOutputNeverOverStdin: standard input counts as an input: an output
// that is the file on stdin is refused, the file left intact. Another
// file, or a pipe, on stdin does not stop the output.
func TestOutputNeverOverStdin(t *testing.T) {
	in := writeJSONL(t, resolvedTrace("linux"))
	orig, _ := os.ReadFile(in)
	dir := testenv.TempDir(t)
	script := filepath.Join(dir, "s.star")
	os.WriteFile(script, []byte("def on_event(e):\n    pass\n"), 0o600)
	run := func(stdinPath string, args ...string) (string, int) {
		t.Helper()
		f, err := os.Open(stdinPath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, f, &out, &errb)
		return errb.String(), code
	}
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{in, []string{"convert", "-", "-o", in, "-f", "jsonl"}},
		{in, []string{"print", "-", "-f", "text", "-o", in}},
		{in, []string{"run", script, "--input", "-", "-o", in}},
		{in, []string{"report", "-", "--heatmap", in}},
		{script, []string{"run", "-", "--input", in, "-o", script}},
	} {
		errOut, code := run(c.stdin, c.args...)
		if code == 0 || !strings.Contains(errOut, "same file as the input - (standard input)") {
			t.Errorf("%v < %s: exit %d, stderr %q; want refused", c.args, filepath.Base(c.stdin), code, errOut)
		}
		if got, _ := os.ReadFile(in); string(got) != string(orig) {
			t.Fatalf("%v changed the input (%d bytes, was %d)", c.args, len(got), len(orig))
		}
	}
	// Another file: written, as from the named input.
	other, named := filepath.Join(dir, "other.jsonl"), filepath.Join(dir, "named.jsonl")
	if errOut, code := run(in, "convert", "-", "-o", other, "-f", "jsonl"); code != 0 {
		t.Errorf("convert - -o another file: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "convert", in, "-o", named, "-f", "jsonl"); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, errOut)
	}
	got, _ := os.ReadFile(other)
	want, _ := os.ReadFile(named)
	if len(want) == 0 || string(got) != string(want) {
		t.Errorf("convert - -o another file wrote %d bytes, want the %d of the named input's", len(got), len(want))
	}
}

// TestOutputDevStdout: -o /dev/stdout is standard output, as -o - is,
// though /dev/stdout is a symbolic link, which -o refuses elsewhere.
func TestOutputDevStdout(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /dev/stdout")
	}
	in := writeJSONL(t, resolvedTrace("linux"))
	want, errOut, code := runCLI(t, "print", in, "-f", "jsonl", "-o", "-")
	if code != 0 {
		t.Fatalf("print -o -: exit %d: %s", code, errOut)
	}
	got, errOut, code := runCLI(t, "print", in, "-f", "jsonl", "-o", "/dev/stdout")
	if code != 0 || got != want {
		t.Errorf("print -o /dev/stdout: exit %d, %d bytes on stdout (want %d): %s", code, len(got), len(want), errOut)
	}
}

// TestOutputFileSafety: outputs are 0600, never written through a
// symlink, and a failed run leaves the previous output in place.
func TestOutputFileSafety(t *testing.T) {
	in := writeJSONL(t, resolvedTrace("linux"))
	dir := testenv.TempDir(t)
	for _, args := range [][]string{
		{"print", in, "-o", "OUT"},
		{"convert", in, "-o", "OUT", "-f", "iot"},
		{"report", in, "--heatmap", "OUT"},
		{"report", in, "-o", "OUT"},
		{"compare", in, in, "-o", "OUT", "--format", "json"},
	} {
		out := filepath.Join(dir, args[0]+".out")
		for i := range args {
			if args[i] == "OUT" {
				args[i] = out
			}
		}
		if _, errOut, code := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		st, err := os.Stat(out)
		if err != nil || (runtime.GOOS != "windows" && st.Mode().Perm() != 0o600) {
			t.Errorf("%v: output mode %v (%v), want 0600", args, st.Mode().Perm(), err)
		}
		if testenv.UnderWine() {
			continue // wine's symbolic links are not reparse points: Lstat sees a plain file
		}
		// A symlink at the output path is refused, its target untouched.
		victim := filepath.Join(dir, "victim")
		os.WriteFile(victim, []byte("precious"), 0o644)
		os.Remove(out)
		os.Symlink(victim, out)
		if _, errOut, code := runCLI(t, args...); code == 0 || !strings.Contains(errOut, "symbolic link") {
			t.Errorf("%v over a symlink: exit %d, stderr %q; want refused", args, code, errOut)
		}
		if b, _ := os.ReadFile(victim); string(b) != "precious" {
			t.Errorf("%v wrote through a symlink: %q", args, b)
		}
		os.Remove(out)
	}
	// No temporary files left behind.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestSummaryOutputFile: report -o and compare -o write to the file what
// they print on standard output, and nothing on standard output; a
// damaged input's summary is kept in the file (exit 2), and a run that
// fails before its summary leaves the previous file as it was.
func TestSummaryOutputFile(t *testing.T) {
	in := writeJSONL(t, resolvedTrace("linux"))
	dir := testenv.TempDir(t)
	out := filepath.Join(dir, "summary")
	for _, args := range [][]string{
		{"report", in},
		{"report", in, "--format", "json"},
		{"compare", in, in},
	} {
		want, errOut, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		got, errOut, code := runCLI(t, append(args, "-o", out)...)
		if code != 0 || got != "" {
			t.Fatalf("%v -o: exit %d, stdout %q: %s", args, code, got, errOut)
		}
		if b, _ := os.ReadFile(out); len(want) == 0 || string(b) != want {
			t.Errorf("%v -o wrote %d bytes, want the %d printed without -o", args, len(b), len(want))
		}
	}
	// A damaged input: the report of what was read, exit 2.
	data, _ := os.ReadFile(in)
	cut := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(cut, data[:len(data)*2/3], 0o600)
	os.Remove(out)
	if _, errOut, code := runCLI(t, "report", cut, "-o", out); code != 2 {
		t.Errorf("report of a damaged trace -o: exit %d, want 2: %s", code, errOut)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "read") {
		t.Errorf("report of a damaged trace -o: file holds %q, want the report of what was read", b)
	}
	// A run that fails before writing leaves the old file.
	os.WriteFile(out, []byte("good"), 0o600)
	if _, _, code := runCLI(t, "report", in, "--top", "0", "-o", out); code == 0 {
		t.Fatalf("report --top 0 succeeded")
	}
	if b, _ := os.ReadFile(out); string(b) != "good" {
		t.Errorf("failed report replaced the old output with %q", b)
	}
}

// TestFailedRunKeepsOldOutput: a run that fails leaves the previous
// output as it was (here a script that does not compile: its output file
// was opened, then the run failed).
func TestFailedRunKeepsOldOutput(t *testing.T) {
	in := writeJSONL(t, resolvedTrace("linux"))
	dir := testenv.TempDir(t)
	out := filepath.Join(dir, "out.txt")
	os.WriteFile(out, []byte("good"), 0o600)
	script := filepath.Join(dir, "bad.star")
	os.WriteFile(script, []byte("def on_event(e):\n    print(e.op\n"), 0o600)
	_, _, code := runCLI(t, "run", script, "--input", in, "-o", out)
	if code == 0 {
		t.Fatalf("a script with a syntax error succeeded")
	}
	if b, _ := os.ReadFile(out); string(b) != "good" {
		t.Errorf("failed run replaced the old output with %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("files left: %v", ents)
	}
}

// TestDamagedInputExit2: every reading command exits 2 on damaged input.
func TestDamagedInputExit2(t *testing.T) {
	path := writeJSONL(t, resolvedTrace("linux"))
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)*2/3], 0o600)
	script := filepath.Join(testenv.TempDir(t), "s.star")
	os.WriteFile(script, []byte("def on_event(e):\n    pass\n"), 0o600)
	for _, args := range [][]string{
		{"print", path},
		{"convert", path, "-o", filepath.Join(testenv.TempDir(t), "x.jsonl")},
		{"report", path},
		{"compare", path, path},
		{"run", script, "--input", path},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != 2 {
			t.Errorf("%v on a damaged file: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
	}
}
