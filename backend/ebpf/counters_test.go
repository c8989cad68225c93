package ebpf

import (
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
)

// TestLossWarningSaysRealSize: the ring-buffer warning names the buffer's
// real size, in the unit that fits (--buffer-size 64K said "0 MiB").
func TestLossWarningSaysRealSize(t *testing.T) {
	for _, c := range []struct {
		size uint32
		want string
	}{{64 << 10, "(64 KiB)"}, {8 << 20, "(8 MiB)"}, {4096, "(4 KiB)"}, {1536 << 10, "(1536 KiB)"}} {
		if got := lossWarning(7, c.size); !strings.Contains(got, c.want) || !strings.Contains(got, "7 records lost") {
			t.Errorf("size %d: %q, want %q", c.size, got, c.want)
		}
	}
}

// TestSkippedRunsCounters: a program's skipped runs become a counter
// named after the program with what the misses mean, of its kind; a
// program that skipped nothing adds no counter.
func TestSkippedRunsCounters(t *testing.T) {
	var s event.Stats
	addSkipped(&s, map[string]uint64{"sys_exit": 3, "dio_complete": 345, "sys_enter": 0, "new_prog": 1})
	name, kind := skippedName("sys_exit")
	if kind != event.CountLost || !strings.Contains(name, "sys_exit: system call exits missed") || s.Get(kind, name) != 3 {
		t.Errorf("sys_exit: %q %v = %d", name, kind, s.Get(kind, name))
	}
	name, kind = skippedName("dio_complete")
	if s.Get(kind, name) != 345 || !strings.HasPrefix(name, StatSkipped) {
		t.Errorf("dio_complete: %q = %d", name, s.Get(kind, name))
	}
	// A program the table does not know is still counted, as lost.
	if s.Get(event.CountLost, StatSkipped+"new_prog") != 1 {
		t.Errorf("unknown program not counted: %+v", s.Counters)
	}
	if len(s.Counters) != 3 {
		t.Errorf("%d counters, want 3 (none for a program that skipped nothing): %+v", len(s.Counters), s.Counters)
	}
	if w := skippedWarning(map[string]uint64{"sys_exit": 3, "dio_complete": 345, "sys_enter": 0}); !strings.Contains(w, "dio_complete 345, sys_exit 3") || strings.Contains(w, "sys_enter") {
		t.Errorf("warning %q", w)
	}
}

// TestGrowthWarner: a growing count is warned about at once, then at most
// once an interval, and never when it did not grow (the soak's recorder
// printed 118 lines of skipped runs in 5 minutes, one per second).
func TestGrowthWarner(t *testing.T) {
	var g growthWarner
	t0 := time.Unix(1000, 0)
	steps := []struct {
		after time.Duration
		count uint64
		want  bool
	}{
		{0, 0, false},
		{time.Second, 3, true},
		{2 * time.Second, 5, false},
		{30 * time.Second, 9, false},
		{61 * time.Second, 9, true},
		{62 * time.Second, 12, false},
		{3 * time.Minute, 12, true},
		{3*time.Minute + time.Second, 13, false},
		{5 * time.Minute, 13, true},
	}
	for _, s := range steps {
		if got := g.due(t0.Add(s.after), s.count); got != s.want {
			t.Errorf("at %v, count %d: due %v, want %v", s.after, s.count, got, s.want)
		}
	}
}
