package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// TestTraceAndRecordStacks: trace --stacks user prints the write's frames
// under it, named; record --stacks both, then print --stacks, names them
// from the file (#14).
func TestTraceAndRecordStacks(t *testing.T) {
	testenv.RequirePrivileged(t, "traces with eBPF")
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc not installed (scripts/setup installs it)")
	}
	dir := testenv.TempDir(t)
	bin := filepath.Join(dir, "stacks")
	if out, err := exec.Command("gcc", "-O0", "-g", "-fno-omit-frame-pointer", "-o", bin,
		"../backend/ebpf/testdata/stacks/stacks.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	want := "at write_block (stacks.c"
	check := func(what, text string) {
		t.Helper()
		i := strings.Index(text, want)
		if i < 0 {
			t.Fatalf("%s: no %q:\n%s", what, want, text)
		}
		rest := text[i:]
		for _, fn := range []string{"at inner_fn", "at outer_fn", "at main"} {
			j := strings.Index(rest, fn)
			if j < 0 {
				t.Fatalf("%s: %q does not follow:\n%s", what, fn, text)
			}
			rest = rest[j:]
		}
	}
	text, stderr, code := runCLI(t, "trace", "--stacks", "user", "--path", out, "--", bin, out)
	if code != 0 {
		t.Fatalf("trace: code %d\n%s", code, stderr)
	}
	check("trace --stacks user", text)

	iot := filepath.Join(dir, "t.iot")
	if _, stderr, code := runCLI(t, "record", "--stacks", "both", "-o", iot, "--", bin, out); code != 0 {
		t.Fatalf("record: code %d\n%s", code, stderr)
	}
	text, stderr, code = runCLI(t, "print", "--stacks", "--path", out, iot)
	if code != 0 {
		t.Fatalf("print: code %d\n%s", code, stderr)
	}
	check("print --stacks", text)
	if _, stderr, code := runCLI(t, "trace", "--stacks", "sideways", "--", "true"); code == 0 || !strings.Contains(stderr, "--stacks") {
		t.Errorf("--stacks sideways: code %d, %s", code, stderr)
	}
}
