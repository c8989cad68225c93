package etw

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend/etw/internal/etwsynth"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/cputime"
	"github.com/iotrace/iotrace/tracefile"
)

// The first pass's bounds (docs/etw.md, "What the first pass keeps"):
// each case is the record stream a crafted file of a few hundred bytes
// gives once its buffers are decompressed (issue 35), made as it is read
// (etwsynth.Stream), and must be read in memory and time bounded by the
// records it holds: under 100 MB and 2 s of CPU, Ctrl-C honoured.

// within runs fn and fails t when the heap grew by more than maxHeap
// bytes at its peak (sampled every millisecond) or fn took more than
// maxCPU of the process's CPU time (wall time where that is not known).
func within(t *testing.T, maxHeap uint64, maxCPU time.Duration, fn func()) {
	t.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := heap()
	var peak uint64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, heap())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	cpu0, wall0 := cputime.Process(), time.Now()
	fn()
	cpu, wall := cputime.Process()-cpu0, time.Since(wall0)
	close(stop)
	wg.Wait()
	peak = max(peak, heap())
	grew := uint64(0)
	if peak > base {
		grew = peak - base
	}
	if cpu <= 0 {
		cpu = wall
	}
	t.Logf("heap +%.1f MB at its peak, %v CPU, %v wall", float64(grew)/1e6, cpu.Round(time.Millisecond), wall.Round(time.Millisecond))
	if grew > maxHeap {
		t.Errorf("heap grew by %.1f MB, want at most %.1f MB", float64(grew)/1e6, float64(maxHeap)/1e6)
	}
	if cpu > maxCPU {
		t.Errorf("took %v of CPU, want at most %v", cpu, maxCPU)
	}
}

// readWithin reads src through the pipeline into sink, in at most maxHeap
// more heap and 2 s of CPU (within).
func readWithin(t *testing.T, src Records, opts Options, maxHeap uint64, sink event.Sink) {
	t.Helper()
	var err error
	within(t, maxHeap, 2*time.Second, func() { err = Run(context.Background(), src, opts, sink) })
	if err != nil {
		t.Fatal(err)
	}
}

// countingSink counts what it is given.
type countingSink struct{ events, facts, nameFacts int }

func (c *countingSink) Begin(*event.Header) error { return nil }
func (c *countingSink) Event(*event.Event) error  { c.events++; return nil }
func (c *countingSink) Fact(f *event.Fact) error {
	c.facts++
	if f.Kind == event.FactName {
		c.nameFacts++
	}
	return nil
}
func (c *countingSink) End(*event.Trailer) error { return nil }

// one returns the single record of a builder.
func one(add func(b *etwsynth.Recs)) record.Record {
	var b etwsynth.Recs
	add(&b)
	return b.Recs[0]
}

// headerOnly is the stream's head: the EventTrace header at time 0.
func headerOnly() []record.Record {
	return []record.Record{one(func(b *etwsynth.Recs) { b.Header(0) })}
}

// noTidStream: samples with no thread in their header on processor 0,
// their times scattered (each 4,096 of them span the whole trace, out of
// order), and kernel stack key references on processor 1 not right after
// their event, of times among the samples' that no sample has: each
// reference's event is looked for among all the samples. Before, every
// reference scanned every block of samples: quadratic (a 676-byte file
// ran 26 s; 100,000 references ran past 45 s, Ctrl-C ignored).
func noTidStream(samples, refs int) *etwsynth.Stream {
	sample := one(func(b *etwsynth.Recs) { b.Sample(0, 0xfffff80000101000, 7) })
	ref := one(func(b *etwsynth.Recs) { b.KeyRef(0, 37, 0, 4, 8, 0x10) })
	refData := make([]byte, len(ref.UserData))
	copy(refData, ref.UserData)
	period := samples/refs + 1 // a reference after every period-1 samples, then the rest of the samples
	return &etwsynth.Stream{Head: headerOnly(), N: samples + refs, Make: func(i int, r *record.Record) {
		if i < refs*period && i%period == period-1 {
			j := int64(i / period)
			*r = ref
			r.CPU, r.Timestamp = 1, 2*int64(samples)+j
			binary.LittleEndian.PutUint64(refData, uint64(2*(j*int64(samples)/int64(refs))+1)) // odd: no sample's time
			r.UserData = refData
			return
		}
		*r = sample
		r.Timestamp = 2 * (int64(i) * 7919 % int64(samples+refs)) // scattered over [0, 2N)
	}}
}

// TestBoundsNoTidLookup: the events of stacks not right after theirs are
// looked for among the records with no thread in their header in linear
// time; with stacks not wanted, nothing is kept for them.
func TestBoundsNoTidLookup(t *testing.T) {
	for _, c := range []struct {
		name           string
		samples, refs  int
		noStacks       bool
		maxHeap        uint64
		wantNoEvent    uint64
		wantStacksOff  uint64
		wantOrphanRefs uint64
	}{
		{name: "100k references", samples: 200_000, refs: 100_000, maxHeap: 100 << 20, wantOrphanRefs: 100_000},
		{name: "few references, many records", samples: 4_000_000, refs: 1_000, maxHeap: 100 << 20, wantOrphanRefs: 1_000},
		{name: "stacks not wanted", samples: 4_000_000, refs: 1_000, noStacks: true, maxHeap: 8 << 20, wantStacksOff: 1_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out countingSink
			var tr tallySink
			readWithin(t, noTidStream(c.samples, c.refs), Options{NoStacks: c.noStacks}, c.maxHeap, tr.wrap(&out))
			st := tr.stats
			if g := st.Get(event.CountLost, StatStacksOrphan); g != c.wantOrphanRefs {
				t.Errorf("%s = %d, want %d", StatStacksOrphan, g, c.wantOrphanRefs)
			}
			if g := st.Get(event.CountInfo, StatStacksOff); g != c.wantStacksOff {
				t.Errorf("%s = %d, want %d", StatStacksOff, g, c.wantStacksOff)
			}
		})
	}
}

// tallySink keeps the trailer's stats of the sink it wraps.
type tallySink struct {
	event.Sink
	stats event.Stats
}

func (s *tallySink) wrap(sink event.Sink) *tallySink { s.Sink = sink; return s }
func (s *tallySink) End(tr *event.Trailer) error {
	s.stats = tr.Stats
	return s.Sink.End(tr)
}

// TestBoundsCancelAssembly: Ctrl-C when the first pass has read its
// records, before it has assembled its stacks, ends the run within 1 s.
func TestBoundsCancelAssembly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := noTidStream(200_000, 100_000)
	var cancelled time.Time
	src.FirstPassDone = func() { cancelled = time.Now(); cancel() }
	var out countingSink
	err := Run(ctx, src, Options{}, &out)
	if took := time.Since(cancelled); !errors.Is(err, context.Canceled) || took > time.Second {
		t.Fatalf("Run returned %v %v after the cancel, want context.Canceled within 1 s", err, took.Round(time.Millisecond))
	}
	if out.events != 0 || out.facts != 0 {
		t.Errorf("%d events, %d facts after the cancel", out.events, out.facts)
	}
}

// TestBoundsKeyRundowns: one stack key rundown repeated (1,156 bytes that
// decompress to 842 MB of definitions before) is kept once.
func TestBoundsKeyRundowns(t *testing.T) {
	frames := make([]uint64, 1000)
	for i := range frames {
		frames[i] = 0xfffff80000100000 + uint64(i)*16
	}
	def := one(func(b *etwsynth.Recs) { b.KeyDef(1000, 36, 0x10, frames...) })
	src := &etwsynth.Stream{Head: headerOnly(), N: 20_000, Make: func(i int, r *record.Record) { *r = def }}
	var out countingSink
	readWithin(t, src, Options{}, 20<<20, &out)
}

// TestBoundsStacksAtOneTime: many events of one thread at one time, each
// with its stack, take theirs in a step each. Before, each event scanned
// the stacks of that time the events before it had taken: quadratic.
func TestBoundsStacksAtOneTime(t *testing.T) {
	read := one(func(b *etwsynth.Recs) { b.ReadWrite(1000, 67, 8, 4, 0x100, 0x200, 0x300, 0, 4096) })
	stack := one(func(b *etwsynth.Recs) { b.Stack(1000, 1000, 4, 8, 0xfffff80000101000, 0x00007ff600001000) })
	const pairs = 100_000
	src := &etwsynth.Stream{Head: headerOnly(), N: 2 * pairs, Make: func(i int, r *record.Record) {
		if i%2 == 0 {
			*r = read
		} else {
			*r = stack
		}
	}}
	var out countingSink
	var tr tallySink
	readWithin(t, src, Options{}, 100<<20, tr.wrap(&out))
	if g := tr.stats.Get(event.CountInfo, StatStacksFile); out.events != pairs || g != pairs {
		t.Errorf("%d events, %d with a stack, want %d each", out.events, g, pairs)
	}
}

// TestBoundsUndecodedKinds: records the first pass takes that no decoder
// knows, of many kinds (StackWalk of versions above 3), are counted by
// kind in a step each. Before, each was compared with every kind so far.
func TestBoundsUndecodedKinds(t *testing.T) {
	stack := one(func(b *etwsynth.Recs) { b.Stack(1000, 1000, 4, 8, 0xfffff80000101000) })
	const n = 100_000
	src := &etwsynth.Stream{Head: headerOnly(), N: n, Make: func(i int, r *record.Record) {
		*r = stack
		r.Version = uint16(4 + i%60000)
		r.Opcode = uint8(32 + i/60000)
	}}
	var out countingSink
	var tr tallySink
	readWithin(t, src, Options{}, 100<<20, tr.wrap(&out))
	var undecoded uint64
	for _, c := range tr.stats.Counters {
		if c.Kind == event.CountInfo && c.Value == n {
			undecoded++
		}
	}
	if undecoded == 0 {
		t.Errorf("no counter of the %d records not decoded: %v", n, tr.stats.Sorted())
	}
}

// TestBoundsProcessStarts: a pid started and ended many times, and many
// events of it, cost a search each for the process they belong to.
// Before, each event scanned the pid's processes from the last.
func TestBoundsProcessStarts(t *testing.T) {
	start := one(func(b *etwsynth.Recs) { b.Process(0, 1, 900, 4, "app.exe", "app") })
	stop := one(func(b *etwsynth.Recs) { b.Process(0, 2, 900, 4, "app.exe", "app") })
	read := one(func(b *etwsynth.Recs) { b.ReadWrite(0, 67, 8, 900, 0x100, 0x200, 0x300, 0, 4096) })
	const n = 100_000
	src := &etwsynth.Stream{Head: headerOnly(), N: 3 * n, Make: func(i int, r *record.Record) {
		switch {
		case i < 2*n && i%2 == 0:
			*r = start
		case i < 2*n:
			*r = stop
		default:
			*r = read
		}
		r.Timestamp = int64(1 + i) // every process a tick long; the reads after them
		if i >= 2*n {
			r.Timestamp = int64(2 + i - 2*n) // during the first processes
		}
	}}
	var out countingSink
	readWithin(t, src, Options{}, 100<<20, &out)
	if out.events != n {
		t.Errorf("%d events, want %d", out.events, n)
	}
}

// TestBoundsRenamedBackAndForth: one FileKey renamed back and forth at
// one time (2,320 bytes gave 855 MB of name history and a 100 MB .iot):
// the name history holds one binding from that time, and the sink gets
// one fact for it; a read after it is named by the last name.
func TestBoundsRenamedBackAndForth(t *testing.T) {
	const key = 0xfffff8a001300c50
	names := [2]record.Record{
		one(func(b *etwsynth.Recs) { b.FileName(1000, 0, key, `\Device\HarddiskVolume2\a`) }),
		one(func(b *etwsynth.Recs) { b.FileName(1000, 0, key, `\Device\HarddiskVolume2\b`) }),
	}
	read := one(func(b *etwsynth.Recs) { b.ReadWrite(2000, 67, 8, 4, 0x100, 0x200, key, 0, 4096) })
	const n = 1_000_000
	src := &etwsynth.Stream{Head: headerOnly(), N: n + 1, Make: func(i int, r *record.Record) {
		if i == n {
			*r = read
			return
		}
		*r = names[i%2]
	}}
	var iot countingWriter
	w := tracefile.NewWriter(&iot, tracefile.WriterOptions{})
	var ev pathSink
	readWithin(t, src, Options{}, 16<<20, ev.wrap(w))
	if ev.nameFacts > 2 || iot.n > 64<<10 {
		t.Errorf("%d name facts, a %d-byte .iot: want at most 2 facts and 64 KiB", ev.nameFacts, iot.n)
	}
	if len(ev.paths) != 1 || ev.paths[0] != `\Device\HarddiskVolume2\b` {
		t.Errorf("read named %q, want the last name", ev.paths)
	}
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int }

func (c *countingWriter) Write(b []byte) (int, error) { c.n += len(b); return len(b), nil }

// pathSink keeps the paths of the events and counts the name facts.
type pathSink struct {
	event.Sink
	paths     []string
	nameFacts int
}

func (s *pathSink) wrap(sink event.Sink) *pathSink { s.Sink = sink; return s }
func (s *pathSink) Event(e *event.Event) error {
	s.paths = append(s.paths, e.Path)
	return s.Sink.Event(e)
}
func (s *pathSink) Fact(f *event.Fact) error {
	if f.Kind == event.FactName {
		s.nameFacts++
	}
	return s.Sink.Fact(f)
}
