package phase

import (
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
)

// TestTimer: consecutive phases each last from the end of the one before,
// phases run beside them keep their own time, and every phase becomes a
// counter named prefix+phase.
func TestTimer(t *testing.T) {
	tm := New("stop µs: ")
	time.Sleep(30 * time.Millisecond)
	tm.Done("first")
	tm.Done("second") // at once after the first: timed from the first's end, it is shorter (unless the machine stalls 30 ms in between)
	var wg sync.WaitGroup
	for _, name := range []string{"beside a", "beside b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tm.Add(name, 5*time.Millisecond)
		}()
	}
	wg.Wait()
	tm.Begin()
	tm.Since("since", time.Now().Add(-3*time.Millisecond))
	var st event.Stats
	tm.AddTo(&st)
	get := func(name string) uint64 { return st.Get(event.CountInfo, "stop µs: "+name) }
	if us := get("first"); us < 30000 {
		t.Errorf("first: %d µs, want at least 30000", us)
	}
	if us := get("second"); us >= get("first") {
		t.Errorf("second: %d µs, not less than the first's %d: want the time since the first ended", us, get("first"))
	}
	if get("beside a") != 5000 || get("beside b") != 5000 {
		t.Errorf("beside: %d and %d µs, want 5000", get("beside a"), get("beside b"))
	}
	if us := get("since"); us < 3000 {
		t.Errorf("since: %d µs, want at least 3000", us)
	}
	if n := len(st.Counters); n != 5 {
		t.Errorf("%d counters, want 5", n)
	}
}
