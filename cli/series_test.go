package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/report"
	"github.com/iotrace/iotrace/rotate"
)

// TestReportRotatedSeries: `report DIR` over the files of a rotated
// recording (record --rotate: one header, facts snapshotted into each
// file, processes and files running across the cuts) gives the rows of the
// whole recording: one per process (pid and start time) and per file, with
// the same totals and no "≥" bounds. Before, each file's rows were listed
// apart, marked with their host.
func TestReportRotatedSeries(t *testing.T) {
	dir := testenv.TempDir(t)
	whole, tr := writeSynthJSONL(t, dir, "whole.jsonl", synth.Options{Seed: 11, Events: 4000, BlockPercent: 20})
	seriesDir := filepath.Join(dir, "series")
	if err := os.Mkdir(seriesDir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	files := 0
	s, err := rotate.New(rotate.Options{Dir: seriesDir, MaxBytes: 8 << 10, FlushEvery: time.Millisecond,
		Now:    func() time.Time { now = now.Add(time.Second); return now },
		OnFile: func(string, uint64) { files++ }})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(s); err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("the recording was cut into %d files, want several", files)
	}

	get := func(args ...string) report.Result {
		t.Helper()
		out, errs, code := runIotrace(t, append([]string{"report", "--format", "json", "--top", "1000"}, args...)...)
		if code != 0 {
			t.Fatalf("report %v: exit %d: %s", args, code, errs)
		}
		var res report.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	want, got := get(whole), get(seriesDir)
	if got.Trace.Events != want.Trace.Events {
		t.Errorf("events %d, want %d", got.Trace.Events, want.Trace.Events)
	}
	for _, c := range []struct {
		what      string
		got, want []report.Entity
	}{
		{"processes", got.Processes, want.Processes},
		{"files by bytes", got.FilesByBytes, want.FilesByBytes},
		{"files by time", got.FilesByTime, want.FilesByTime},
	} {
		if len(c.got) != len(c.want) {
			t.Errorf("%s: %d rows over %d files, %d in the whole trace", c.what, len(c.got), files, len(c.want))
		}
		for i := range min(len(c.got), len(c.want)) {
			g, w := c.got[i], c.want[i]
			if g.Name != w.Name || g.Pid != w.Pid || g.ProcStart != w.ProcStart || g.Count != w.Count || g.Bytes != w.Bytes ||
				g.Time != w.Time || g.BlockBytes != w.BlockBytes || g.ErrorBytes != 0 || g.ErrorTime != 0 {
				t.Errorf("%s row %d: %+v\nwant %+v", c.what, i, g, w)
			}
		}
	}
}
