package output

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
)

// benchSinks are the formats measured per event.
var benchSinks = []struct {
	name string
	new  func(io.Writer) event.Sink
}{
	{"text", func(w io.Writer) event.Sink { return NewText(w, Options{}) }},
	{"jsonl", func(w io.Writer) event.Sink { return NewJSONL(w) }},
	{"csv", func(w io.Writer) event.Sink { return NewCSV(w, Options{}) }},
}

func begun(t testing.TB, s event.Sink, smp sample) {
	h := smp.h
	must(t, s.Begin(&h))
	for i := range smp.facts {
		f := smp.facts[i]
		must(t, s.Fact(&f))
	}
}

// BenchmarkSink measures one event rendered by each format (a mix of file,
// block and failed events) written to io.Discard, and side by side the
// same events rendered with the standard library (what jsonl and text
// replace): encoding/json on the event struct and fmt.Fprintf of the text
// columns. With -count N every round measures all five back to back, so
// the ratios hold even on a noisy machine.
func BenchmarkSink(b *testing.B) {
	smp := linuxSample()
	for _, bs := range benchSinks {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.new(io.Discard)
			begun(b, s, smp)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Event(&smp.events[i%len(smp.events)]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			tr := smp.trailer
			must(b, s.End(&tr))
		})
	}
	b.Run("encoding-json", func(b *testing.B) {
		enc := json.NewEncoder(io.Discard)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := enc.Encode(&smp.events[i%len(smp.events)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fmt-text", func(b *testing.B) {
		w := bufio.NewWriter(io.Discard)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			e := &smp.events[i%len(smp.events)]
			fmt.Fprintf(w, "%12.6f %7s %-26s %-8s %-18s %12d %9d %10s %10s  %q %s\n",
				float64(e.Time)/1e9, "#"+strconv.FormatUint(e.ID, 10), fmt.Sprintf("%s[%d/%d]", e.Comm, e.Pid, e.Tid),
				e.Op, e.Native, e.Offset, e.Size, e.Status, time.Duration(e.Duration), e.Path, e.Flags)
		}
		w.Flush()
	})
}

func TestNoAllocPerEvent(t *testing.T) {
	smp := linuxSample()
	for _, s := range []struct {
		name string
		sink event.Sink
	}{{"text", NewText(io.Discard, Options{})}, {"jsonl", NewJSONL(io.Discard)}} {
		begun(t, s.sink, smp)
		i := 0
		allocs := testing.AllocsPerRun(2000, func() {
			if err := s.sink.Event(&smp.events[i%len(smp.events)]); err != nil {
				t.Fatal(err)
			}
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %.2f allocations per event, want 0", s.name, allocs)
		}
	}
}

// discard is a sink that keeps nothing.
type discard struct{}

func (discard) Begin(*event.Header) error { return nil }
func (discard) Event(*event.Event) error  { return nil }
func (discard) Fact(*event.Fact) error    { return nil }
func (discard) End(*event.Trailer) error  { return nil }
