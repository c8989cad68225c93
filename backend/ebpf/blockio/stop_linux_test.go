package blockio

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/event"
)

// TestStopDeliversTheRingsTail: Run stops as soon as its context is done,
// not at its next poll, and still delivers every record the ring holds
// then: the completions of O_DIRECT reads made just before the stop,
// which no wakeup announced (the poll interval is an hour and the ring's
// wakeup threshold, an eighth of 64 MiB, far above what they fill). A
// stop that waited for the poll would not return; one that dropped the
// ring's tail would lose reads or report them without completion. The
// witness's tracefs instance, removed in the background at stop, is gone
// once Close returns.
func TestStopDeliversTheRingsTail(t *testing.T) {
	loop := newLoop(t, 16<<20, false)
	fd, err := unix.Open(loop.path, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	r := startTracer(t, Options{PollInterval: time.Hour, BufferSize: 64 << 20})
	const reads = 300
	buf := alignedBuf(4096)
	for i := range reads {
		if _, err := unix.Pread(fd, buf, int64(i)*8192); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	evs := onDev(r.stop(t), loop.dev)
	took := time.Since(t0)
	t.Logf("Run returned %v after its context was cancelled", took)
	if took > 5*time.Second {
		t.Errorf("Run returned %v after its context was cancelled: it waited for its poll", took)
	}
	offsets := map[int64]bool{}
	for i := range evs {
		e := &evs[i]
		if e.Op != event.OpBlockRead || e.Size != 4096 {
			continue
		}
		if e.Flags&event.FlagNoCompletion != 0 || e.Duration <= 0 || e.Status != event.StatusOK {
			t.Errorf("%s: want a completed read", describe(e))
		}
		offsets[e.Offset] = true
	}
	if len(offsets) != reads {
		t.Errorf("%d of the %d reads made just before the stop delivered", len(offsets), reads)
	}
	st := r.t.Stats()
	have := map[string]bool{}
	for _, c := range st.Counters {
		have[c.Name] = true
	}
	for _, phase := range []string{StopPrefix + phaseDetachQueue, StopPrefix + phaseSettle, StopPrefix + phaseDrain, StopPrefix + phaseInFlight,
		StartupPrefix + phaseWitness, StartupPrefix + phaseAttach, StartupPrefix + phaseReader} {
		if !have[phase] {
			t.Errorf("no counter %q", phase)
		}
	}
	if err := r.t.Close(); err != nil {
		t.Fatal(err)
	}
	if left := witnessInstances(t); len(left) != 0 {
		t.Errorf("tracefs instances of this process left after Close: %v", left)
	}
}

// witnessInstances lists the tracefs instances of this process's
// witnesses.
func witnessInstances(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/sys/kernel/tracing/instances")
	if err != nil {
		t.Skipf("tracefs: %v", err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), witnessPrefix+"-"+strconv.Itoa(os.Getpid())+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}
