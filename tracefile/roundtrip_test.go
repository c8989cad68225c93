package tracefile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"

	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
)

// write encodes r as a .iot file.
func write(t testing.TB, r *synth.Recorded, opts WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, opts)
	if err := r.Replay(w); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return buf.Bytes()
}

// read decodes a .iot file into a recording.
func read(t testing.TB, b []byte) (*synth.Recorded, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	rec := synth.NewRecorder()
	err = r.Run(context.Background(), rec)
	return rec.Trace(), err
}

func TestRoundTripSynth(t *testing.T) {
	for _, os := range []string{"linux", "windows"} {
		for _, resolved := range []bool{false, true} {
			want := synth.Trace(synth.Options{OS: os, Seed: 1, Events: 6000, Resolved: resolved})
			for _, opts := range []WriterOptions{{}, {ChunkSize: 1000}, {ChunkRecords: 1}, {ChunkRecords: 7}} {
				b := write(t, want, opts)
				got, err := read(t, b)
				if err != nil {
					t.Fatalf("%s %+v: read: %v", os, opts, err)
				}
				if err := synth.Compare(want, got); err != nil {
					t.Fatalf("%s %+v: round trip differs:\n%v", os, opts, err)
				}
			}
		}
	}
}

func TestRoundTripAllFields(t *testing.T) {
	want := synth.AllFieldsTrace()
	for _, opts := range []WriterOptions{{}, {ChunkRecords: 1}, {ChunkRecords: 3}} {
		got, err := read(t, write(t, want, opts))
		if err != nil {
			t.Fatal(err)
		}
		if err := synth.Compare(want, got); err != nil {
			t.Fatalf("%+v:\n%v", opts, err)
		}
	}
}

func TestRoundTripEmpty(t *testing.T) {
	want := &synth.Recorded{Began: true, Ended: true}
	b := write(t, want, WriterOptions{})
	got, err := read(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.Compare(want, got); err != nil {
		t.Fatal(err)
	}
	t.Logf("an empty trace is %d bytes", len(b))
}

// randomTrace returns a trace of random values over the full range of
// every field, including invalid UTF-8, unknown enum values and extreme
// integers.
func randomTrace(seed uint64, n int) *synth.Recorded {
	rng := rand.New(rand.NewPCG(seed, seed^0xabcdef))
	u64 := func() uint64 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return math.MaxUint64 - uint64(rng.IntN(3))
		case 2:
			return uint64(rng.IntN(200))
		case 3:
			return 1 << uint(rng.IntN(64))
		}
		return rng.Uint64()
	}
	i64 := func() int64 {
		switch rng.IntN(5) {
		case 0:
			return math.MinInt64 + int64(rng.IntN(3))
		case 1:
			return math.MaxInt64 - int64(rng.IntN(3))
		case 2:
			return int64(rng.IntN(400)) - 200
		case 3:
			return -1
		}
		return int64(u64())
	}
	str := func() string {
		switch rng.IntN(5) {
		case 0:
			return ""
		case 1:
			return "\xff\xfe invalid \xc3"
		case 2:
			return strings.Repeat("ü/", rng.IntN(1500))
		}
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	dev := func() event.Device {
		return event.Device{Major: uint32(u64()), Minor: uint32(u64()), IsDisk: rng.IntN(2) == 0}
	}
	r := &synth.Recorded{Began: true, Ended: true}
	r.Header = event.Header{Source: event.Source(u64()), OS: str(), OSVersion: str(), Hostname: str(),
		CPUs: uint32(u64()), PointerSize: uint8(u64()), StartWall: i64(),
		Clock: event.Clock{Kind: event.ClockKind(u64()), Freq: u64(), Origin: i64()}, Command: str(), Tool: str(),
		Layers: event.Layers(u64())}
	for i := 0; i < n; i++ {
		if rng.IntN(4) == 0 {
			r.Order = append(r.Order, synth.Item{Kind: synth.ItemFact, Index: len(r.Facts)})
			r.Facts = append(r.Facts, event.Fact{Kind: event.FactKind(u64()), Time: i64(), Rundown: rng.IntN(2) == 0,
				End: rng.IntN(2) == 0, Space: event.HandleSpace(u64()), Pid: uint32(u64()), ProcStart: i64(),
				Tid: uint32(u64()), PPid: uint32(u64()), Handle: u64(), Dev: dev(), Name: str(), Image: str(), Detail: str()})
			continue
		}
		r.Order = append(r.Order, synth.Item{Kind: synth.ItemEvent, Index: len(r.Events)})
		r.Events = append(r.Events, event.Event{
			ID: u64(), Source: event.Source(u64()), Layer: event.Layer(u64()), Op: event.Op(u64()), Native: str(),
			Time: i64(), Duration: i64(), Wait: i64(), CPU: uint32(u64()), Pid: uint32(u64()), Tid: uint32(u64()),
			ProcStart: i64(), Comm: str(), Path: str(), Path2: str(), FD: int32(i64()), FileObject: u64(),
			FileKey: u64(), Inode: u64(), Offset: i64(), Size: u64(), Bytes: i64(), Status: event.Status(u64()),
			Code: uint32(u64()), Flags: event.Flags(u64()), OpenFlags: uint32(u64()), Mode: uint32(u64()),
			Disposition: uint8(u64()), Priority: uint8(u64()), IOFlags: uint32(u64()), Info: uint32(u64()),
			Dev: dev(), Sector: u64(), Request: u64(), Cause: u64(), CausedIOs: uint32(u64()),
			CausedBytes: u64(), Note: str(),
		})
	}
	r.Trailer.End = i64()
	r.Trailer.Layers = event.Layers(u64())
	for i := rng.IntN(5); i > 0; i-- {
		r.Trailer.Stats.Counters = append(r.Trailer.Stats.Counters,
			event.Counter{Kind: event.CounterKind(u64()), Name: str(), Value: u64()})
	}
	return r
}

func TestRoundTripRandom(t *testing.T) {
	for seed := uint64(0); seed < 120; seed++ {
		want := randomTrace(seed, int(seed%50)*4)
		opts := WriterOptions{ChunkRecords: 1 + int(seed%17)}
		got, err := read(t, write(t, want, opts))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := synth.Compare(want, got); err != nil {
			t.Fatalf("seed %d:\n%v", seed, err)
		}
	}
}

func TestScanFacts(t *testing.T) {
	want := synth.Trace(synth.Options{OS: "windows", Seed: 5, Events: 3000})
	path := filepath.Join(testenv.TempDir(t), "w.iot")
	w, err := Create(path, WriterOptions{ChunkRecords: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := want.Replay(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var facts []event.Fact
	if err := r.ScanFacts(context.Background(), func(f *event.Fact) error {
		facts = append(facts, *f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(facts, want.Facts) {
		t.Fatalf("ScanFacts: %d facts, want %d", len(facts), len(want.Facts))
	}
	rec := synth.NewRecorder()
	if err := r.Run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := synth.Compare(want, rec.Trace()); err != nil {
		t.Fatalf("Run after ScanFacts:\n%v", err)
	}
	// Not seekable: a clear error.
	r2, err := NewReader(struct{ io.Reader }{bytes.NewReader(write(t, want, WriterOptions{}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.ScanFacts(context.Background(), func(*event.Fact) error { return nil }); err == nil || !strings.Contains(err.Error(), "seekable") {
		t.Errorf("ScanFacts on a pipe: %v", err)
	}
}

func TestWriterProtocol(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	e := event.New()
	if err := w.Event(&e); err == nil {
		t.Error("Event before Begin accepted")
	}
	h := event.Header{}
	if err := w.Begin(&h); err != nil {
		t.Fatal(err)
	}
	if err := w.Begin(&h); err == nil {
		t.Error("second Begin accepted")
	}
	tr := event.Trailer{}
	if err := w.End(&tr); err != nil {
		t.Fatal(err)
	}
	if err := w.Fact(&event.Fact{}); err == nil {
		t.Error("Fact after End accepted")
	}
	// A write error sticks and names the offset.
	w = NewWriter(failWriter{}, WriterOptions{})
	if err := w.Begin(&h); err == nil || !strings.Contains(err.Error(), "offset") {
		t.Errorf("write error: %v", err)
	}
	if err := w.Event(&e); err == nil {
		t.Error("write error did not stick")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestSinkErrorStopsReader(t *testing.T) {
	b := write(t, synth.Trace(synth.Options{Events: 500}), WriterOptions{ChunkRecords: 50})
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	s := &stopSink{after: 120}
	if err := r.Run(context.Background(), s); !errors.Is(err, errStop) {
		t.Fatalf("got %v", err)
	}
	if s.Ended || len(s.Events) != 120 {
		t.Errorf("ended %v after %d events", s.Ended, len(s.Events))
	}
	// A cancelled context stops between chunks.
	r, _ = NewReader(bytes.NewReader(b))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Run(ctx, synth.NewRecorder()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

var errStop = errors.New("stop")

type stopSink struct {
	synth.Recorder
	after int
}

func (s *stopSink) Event(e *event.Event) error {
	if len(s.Events) == s.after {
		return errStop
	}
	return s.Recorder.Event(e)
}
