package funclen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the longest a hand-written function may be.
const maxLines = 150

// maxHotPaths is how many measured hot paths may be longer.
const maxHotPaths = 3

// allowance says why a function may be longer than maxLines: a measured
// hot path (Benchmark names the benchmark that measures it, which its doc
// comment names too), or a function another change in flight splits
// (Pending says which; the entry goes when that change lands).
type allowance struct {
	Benchmark string
	Pending   string
}

// allowed are the functions allowed over maxLines.
var allowed = map[string]allowance{}

// TestNoLongFunctions fails for a hand-written function over maxLines
// lines that is not allowed, for an allowed hot path whose doc comment
// does not name its benchmark, and for an allowance no longer needed.
func TestNoLongFunctions(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	long, err := Find(root, maxLines)
	if err != nil {
		t.Fatal(err)
	}
	hot := 0
	found := map[string]bool{}
	for _, f := range long {
		found[f.Name] = true
		a, ok := allowed[f.Name]
		switch {
		case !ok:
			t.Errorf("%s: %d lines (at most %d; split it into named steps, or allow it as a measured hot path naming its benchmark)", f.Name, f.Lines, maxLines)
		case a.Benchmark != "":
			hot++
			if !strings.Contains(f.Doc, a.Benchmark) {
				t.Errorf("%s: a hot path of %d lines whose doc comment does not name its benchmark %s", f.Name, f.Lines, a.Benchmark)
			}
		case a.Pending == "":
			t.Errorf("%s: allowed without a benchmark or a reason", f.Name)
		}
	}
	if hot > maxHotPaths {
		t.Errorf("%d hot paths over %d lines, at most %d", hot, maxLines, maxHotPaths)
	}
	for name := range allowed {
		if !found[name] {
			t.Errorf("%s: allowed over %d lines but no longer is (or is gone): remove its entry", name, maxLines)
		}
	}
}

// TestFind checks the finder on this package's own source: nothing here
// is long, and a limit of 1 finds every function, methods named with
// their type.
func TestFind(t *testing.T) {
	all, err := Find(".", 1)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range all {
		names[f.Name] = true
	}
	if !names["funclen.go Find"] || !names["funclen.go funcName"] || len(names) != 2 {
		t.Errorf("functions found: %v", names)
	}
	if long, _ := Find(".", maxLines); len(long) != 0 {
		t.Errorf("long functions in funclen: %v", long)
	}
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
