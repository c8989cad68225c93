package outfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

func write(t *testing.T, path, data string, inputs ...string) error {
	t.Helper()
	o, err := Create(path, inputs...)
	if err != nil {
		return err
	}
	if _, err := o.WriteString(data); err != nil {
		o.Abort()
		return err
	}
	return o.Commit()
}

func TestNewFileIs0600(t *testing.T) {
	p := filepath.Join(testenv.TempDir(t), "out.iot")
	if err := write(t, p, "data"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 { // POSIX modes
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}

func TestReplacedFileKeepsMode(t *testing.T) {
	p := filepath.Join(testenv.TempDir(t), "out.txt")
	if err := os.WriteFile(p, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o640)
	if err := write(t, p, "new"); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	b, _ := os.ReadFile(p)
	if (runtime.GOOS != "windows" && st.Mode().Perm() != 0o640) || string(b) != "new" {
		t.Errorf("mode %v data %q, want 0640 new", st.Mode().Perm(), b)
	}
}

func TestRefusesInput(t *testing.T) {
	dir := testenv.TempDir(t)
	in := filepath.Join(dir, "in.iot")
	os.WriteFile(in, []byte("trace"), 0o600)
	hard := filepath.Join(dir, "hard.iot")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	// Same file by another name (a hard link, a path with "./").
	for _, out := range []string{in, hard, dir + "/./in.iot"} {
		if err := write(t, out, "x", in); err == nil || !strings.Contains(err.Error(), "same file as the input") {
			t.Errorf("Create(%s, input %s) = %v, want refused", out, in, err)
		}
	}
	if b, _ := os.ReadFile(in); string(b) != "trace" {
		t.Errorf("input changed: %q", b)
	}
}

// TestRefusesStdin: standard input, when it is a regular file, is an
// input like a named one; a pipe behind it is no file to compare.
func TestRefusesStdin(t *testing.T) {
	dir := testenv.TempDir(t)
	in := filepath.Join(dir, "in.iot")
	os.WriteFile(in, []byte("trace"), 0o600)
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if o, err := CreateReading(in, st); err == nil || !strings.Contains(err.Error(), "same file as the input - (standard input)") {
		if err == nil {
			o.Abort()
		}
		t.Errorf("CreateReading(%s, stdin the same file) = %v, want refused", in, err)
	}
	if b, _ := os.ReadFile(in); string(b) != "trace" {
		t.Errorf("input changed: %q", b)
	}
	// Another file on stdin: the output is written.
	other := filepath.Join(dir, "other.iot")
	o, err := CreateReading(other, st)
	if err != nil {
		t.Fatalf("CreateReading(%s, stdin another file) = %v", other, err)
	}
	o.Abort()
	// A pipe on stdin compares with nothing.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pst, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	o, err = CreateReading(in, pst)
	if err != nil {
		t.Fatalf("CreateReading(%s, stdin a pipe) = %v", in, err)
	}
	o.Abort()
}

func TestRefusesSymlink(t *testing.T) {
	testenv.SkipUnderWine(t, "wine's symbolic links are not reparse points (Lstat sees a plain file)")
	dir := testenv.TempDir(t)
	target := filepath.Join(dir, "victim")
	os.WriteFile(target, []byte("precious"), 0o644)
	link := filepath.Join(dir, "out.iot")
	os.Symlink(target, link)
	if err := write(t, link, "x"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("write through link: %v, want refused", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("link target changed: %q", b)
	}
	dangling := filepath.Join(dir, "d.iot")
	os.Symlink(filepath.Join(dir, "nothing"), dangling)
	if err := write(t, dangling, "x"); err == nil {
		t.Errorf("write through a dangling link succeeded")
	}
	if _, err := os.Lstat(filepath.Join(dir, "nothing")); err == nil {
		t.Errorf("dangling link's target was created")
	}
}

func TestAbortKeepsOldFile(t *testing.T) {
	dir := testenv.TempDir(t)
	p := filepath.Join(dir, "out.iot")
	os.WriteFile(p, []byte("good"), 0o600)
	o, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	o.WriteString("half")
	// Before Commit the old file is intact.
	if b, _ := os.ReadFile(p); string(b) != "good" {
		t.Errorf("during the write: %q", b)
	}
	o.Abort()
	if b, _ := os.ReadFile(p); string(b) != "good" {
		t.Errorf("after Abort: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary file left: %v", ents)
	}
}

func TestKeepLeavesTemp(t *testing.T) {
	dir := testenv.TempDir(t)
	p := filepath.Join(dir, "rec.iot")
	o, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	o.WriteString("partial")
	tmp, err := o.Keep()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(tmp); string(b) != "partial" || filepath.Dir(tmp) != dir {
		t.Errorf("kept %s: %q", tmp, b)
	}
	st, _ := os.Stat(tmp)
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("kept file mode %v", st.Mode().Perm())
	}
}

func TestDeviceWrittenInPlace(t *testing.T) {
	if _, err := os.Stat("/dev/null"); err != nil {
		t.Skip("no /dev/null")
	}
	if err := write(t, "/dev/null", "x"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat("/dev/null")
	if err != nil || st.Mode()&os.ModeDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v %v", st, err)
	}
}

// TestRescue: a rescued output is at its name with what was written, no
// temporary file is left, and a later Commit or Abort does nothing; a
// committed output has nothing to rescue.
func TestRescue(t *testing.T) {
	dir := testenv.TempDir(t)
	p := filepath.Join(dir, "r.iot")
	o, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	o.WriteString("partial")
	if ok, err := o.Rescue(); !ok || err != nil {
		t.Fatalf("Rescue = %v, %v", ok, err)
	}
	o.Abort()
	if b, err := os.ReadFile(p); err != nil || string(b) != "partial" {
		t.Errorf("rescued file: %q, %v", b, err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	q := filepath.Join(dir, "c.iot")
	if err := write(t, q, "whole"); err != nil {
		t.Fatal(err)
	}
	o2, _ := Create(q)
	o2.WriteString("x")
	o2.Commit()
	if ok, err := o2.Rescue(); ok || err != nil {
		t.Errorf("Rescue after Commit = %v, %v", ok, err)
	}
	// Nothing written yet: the file at the path stays as it was.
	o3, _ := Create(q)
	if ok, err := o3.Rescue(); ok || err != nil {
		t.Errorf("Rescue of nothing = %v, %v", ok, err)
	}
	if b, _ := os.ReadFile(q); string(b) != "x" {
		t.Errorf("an empty rescue replaced the file: %q", b)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// TestMissingDirectoryNamed: an output in a directory that does not exist
// (or is a file) is refused naming that directory and the output, never
// the temporary file the user did not name.
func TestMissingDirectoryNamed(t *testing.T) {
	dir := testenv.TempDir(t)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	for _, parent := range []string{filepath.Join(dir, "missing"), file} {
		out := filepath.Join(parent, "x.iot")
		_, err := Create(out)
		if err == nil {
			t.Fatalf("Create(%s) succeeded", out)
		}
		msg := err.Error()
		if !strings.Contains(msg, "create "+out+": directory "+parent+": ") || strings.Contains(msg, ".tmp-") {
			t.Errorf("Create(%s): %q; want the output and its directory named, not the temporary file", out, msg)
		}
	}
	if _, err := Create(filepath.Join(dir, "missing", "x.iot")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v is not ErrNotExist", err)
	}
}
