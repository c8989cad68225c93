package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/iotrace/iotrace/internal/testenv"
)

// TestReportCompareFit160: report and compare text lines fit in 160
// columns, on every real ETL fixture (long Windows paths and device
// names) and on a synthetic Linux trace.
func TestReportCompareFit160(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testenv.ETLDir(t), "*.etl"))
	if len(files) == 0 {
		t.Fatal("no ETL fixtures")
	}
	files = append(files, writeJSONL(t, resolvedTrace("linux")))
	check := func(args []string, out string) {
		for i, l := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(l); n > 160 {
				t.Errorf("%v line %d: %d columns:\n%s", args, i+1, n, l)
			}
		}
	}
	for _, f := range files {
		for _, args := range [][]string{
			{"report", f, "--top", "30"},
			{"compare", f, f},
			{"compare", f, files[len(files)-1]},
		} {
			out, errOut, code := runCLI(t, args...)
			if code != 0 && code != 2 {
				t.Errorf("%v: exit %d: %s", args, code, errOut)
			}
			check(args, out)
		}
	}
}
