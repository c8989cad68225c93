package report

import (
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// TestSeriesTimelines: traces of one host and clock go into one report,
// their times moved onto the first trace's time line (a process that
// started before the second recording keeps one key); another host's
// trace gets a report of its own, merged.
func TestSeriesTimelines(t *testing.T) {
	tr := synth.Trace(synth.Options{Seed: 5, Events: 500})
	s := NewSeries(Options{TopN: 1000})
	replay := func(host string, origin int64) {
		t.Helper()
		tr.Header.Hostname = host
		tr.Header.Clock = event.Clock{Kind: event.ClockBoottime, Freq: 1e9, Origin: origin}
		if err := tr.Replay(s.Trace(nil)); err != nil {
			t.Fatal(err)
		}
	}
	replay("a", 1_000_000_000_000)
	one, _ := s.Result(1000)
	replay("a", 1_000_000_000_000) // the same recording again: the same rows, doubled
	if s.Reports() != 1 {
		t.Fatalf("%d reports for one host", s.Reports())
	}
	two, _ := s.Result(1000)
	if len(two.Processes) != len(one.Processes) || two.Processes[0].Count != 2*one.Processes[0].Count {
		t.Errorf("processes %d (want %d), first count %d (want %d)", len(two.Processes), len(one.Processes), two.Processes[0].Count, 2*one.Processes[0].Count)
	}
	// A later recording of the same boot: its time 0 is 5 s later on the
	// same clock, and its wall-clock start too.
	tr.Header.StartWall += 5_000_000_000
	replay("a", 1_005_000_000_000)
	if s.Reports() != 1 {
		t.Fatalf("%d reports for one boot", s.Reports())
	}
	later, _ := s.Result(1000)
	if later.Trace.Duration < 5_000_000_000 {
		t.Errorf("duration %d: the later recording's times were not moved", later.Trace.Duration)
	}
	// Another boot of the same host: the clock's zero an hour later in
	// wall time.
	tr.Header.StartWall += 3_600_000_000_000
	replay("a", 1_000_000_000_000)
	if s.Reports() != 2 {
		t.Fatalf("%d reports: another boot joined the time line", s.Reports())
	}
	replay("b", 1_000_000_000_000)
	if s.Reports() != 3 {
		t.Fatalf("%d reports for two hosts and two boots", s.Reports())
	}
	merged, err := s.Result(1000)
	if err != nil || len(merged.Hosts) != 2 {
		t.Errorf("merged: %v, hosts %+v", err, merged.Hosts)
	}
}
