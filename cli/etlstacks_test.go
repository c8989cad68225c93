package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestETLStacksOnlyWhenShown: an .etl's stack walks are joined to their
// events only when the output can show stacks (print --stacks, jsonl);
// print without --stacks (and report, and convert to csv, text or
// perfetto) leaves them aside, counted, and keeps nothing per record for
// them in its first pass (issue 35).
func TestETLStacksOnlyWhenShown(t *testing.T) {
	path := filepath.Join(testenv.ETLDir(t), "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl")
	for _, c := range []struct {
		args   []string
		joined bool
	}{
		{[]string{"print", path}, false},
		{[]string{"print", "--stacks", path}, true},
		{[]string{"print", "-f", "jsonl", path}, true},
	} {
		out, errs, code := runCLI(t, c.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errs)
		}
		joined, aside := strings.Contains(out, etw.StatStackRecords), strings.Contains(out, etw.StatStacksOff)
		if joined != c.joined || aside == c.joined {
			t.Errorf("%v: stacks joined %v, left aside %v; want joined %v", c.args, joined, aside, c.joined)
		}
	}
}
