package script

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/script/scripttest"
	"github.com/iotrace/iotrace/script/where"
)

var update = flag.Bool("update", false, "rewrite the golden outputs of the example scripts")

// exampleArgs are the -D arguments an example runs with in its test.
var exampleArgs = map[string]map[string]string{
	"slow_reads.star": {"ms": "10"},
}

func examples(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(t), "examples", "scripts")
	files, err := filepath.Glob(filepath.Join(dir, "*.star"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("%d example scripts in %s, want at least 10", len(files), dir)
	}
	return files
}

// TestExamples runs every example script over the test trace and checks
// its exact output against testdata/examples/NAME.golden.
func TestExamples(t *testing.T) {
	h, facts, evs, tr := scripttest.Build()
	for _, path := range examples(t) {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".star"), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out, errs bytes.Buffer
			s, err := Load(name, src, Options{Stdout: &out, Stderr: &errs, Args: exampleArgs[name]})
			if err != nil {
				t.Fatal(err)
			}
			if err := scripttest.Replay(s, h, facts, evs, tr); err != nil {
				t.Fatalf("run: %v", err)
			}
			if errs.Len() > 0 {
				t.Errorf("stderr: %s", errs.String())
			}
			golden := filepath.Join("testdata", "examples", strings.TrimSuffix(name, ".star")+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./script -run TestExamples -update, then check the output by hand)", err)
			}
			if out.String() != string(want) {
				t.Errorf("output differs from %s\n--- got\n%s\n--- want\n%s", golden, out.String(), want)
			}
		})
	}
}

// TestDocsListEveryField keeps docs/scripts.md in step with the fields.
func TestDocsListEveryField(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "scripts.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range where.Fields() {
		if !strings.Contains(string(doc), "`"+f.Name+"`") {
			t.Errorf("docs/scripts.md does not document the field %s", f.Name)
		}
	}
	for name := range attrs {
		if !strings.Contains(string(doc), "`"+name+"`") && !strings.Contains(string(doc), "`e."+name+"()`") {
			t.Errorf("docs/scripts.md does not document the attribute %s", name)
		}
	}
}

// TestDocsShowSlowestFiles: docs/scripts.md shows slowest_files.star and
// its output as TestExamples runs and checks them, so the page cannot
// drift from what the script prints.
func TestDocsShowSlowestFiles(t *testing.T) {
	root := testenv.RepoRoot(t)
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	doc := read(filepath.Join(root, "docs", "scripts.md"))
	src := read(filepath.Join(root, "examples", "scripts", "slowest_files.star"))
	code := src[strings.Index(src, "FILTER ="):]
	if !strings.Contains(doc, "```python\n"+code+"```\n") {
		t.Errorf("docs/scripts.md does not show examples/scripts/slowest_files.star from FILTER on:\n%s", code)
	}
	out := read(filepath.Join("testdata", "examples", "slowest_files.golden"))
	if !strings.Contains(doc, "```\n"+out+"```\n") {
		t.Errorf("docs/scripts.md does not show the output of slowest_files.star:\n%s", out)
	}
}
