package ebpf

import (
	"testing"

	"github.com/iotrace/iotrace/event"
)

// discardSink counts events and facts and keeps nothing.
type discardSink struct{ events, facts int }

func (*discardSink) Begin(*event.Header) error { return nil }
func (s *discardSink) Event(*event.Event) error {
	s.events++
	return nil
}
func (s *discardSink) Fact(*event.Fact) error {
	s.facts++
	return nil
}
func (*discardSink) End(*event.Trailer) error { return nil }

// BenchmarkTrackerSyscall decodes system-call records as the reader does
// (tracker.handle): pread64 on an open file, the hot path of the
// system-call benchmark (bench/run.sh), and the mix of a build (openat,
// read, fstat, close), per record.
func BenchmarkTrackerSyscall(b *testing.B) {
	const pid = 42
	prepare := func() (*tracker, *discardSink) {
		s := &discardSink{}
		tr := newTracker(s, 1000, nil)
		_ = tr.handle(forkRecord(1500, 1, pid, 1400, 0, "sh"))
		_ = tr.handle(pathRecord(sc("openat"), 1, pid, 0, "/data/f"))
		_ = tr.handle(sysRecord(sc("openat"), 1, 2000, 10, pid, pid, 3, [6]uint64{uint64(0xffffff9c), 0xbeef, 0, 0}, "app"))
		return tr, s
	}
	b.Run("pread64", func(b *testing.B) {
		tr, s := prepare()
		rec := sysRecord(sc("pread64"), 2, 3000, 70, pid, pid, 4096, [6]uint64{3, 0, 4096, 8192}, "app")
		b.ReportAllocs()
		for b.Loop() {
			if err := tr.handle(rec); err != nil {
				b.Fatal(err)
			}
		}
		if s.events < b.N {
			b.Fatalf("%d events for %d records", s.events, b.N)
		}
	})
	b.Run("build-mix", func(b *testing.B) {
		tr, _ := prepare()
		recs := [][]byte{
			pathRecord(sc("openat"), 5, pid, 0, "src/main.c"),
			sysRecord(sc("openat"), 5, 4000, 10, pid, pid, 4, [6]uint64{uint64(0xffffff9c), 0xbeef, 0, 0}, "app"),
			sysRecord(sc("fstat"), 6, 4100, 10, pid, pid, 0, [6]uint64{4, 0xbeef}, "app"),
			sysRecord(sc("read"), 7, 4200, 10, pid, pid, 512, [6]uint64{4, 0xbeef, 4096}, "app"),
			sysRecord(sc("close"), 8, 4300, 10, pid, pid, 0, [6]uint64{4}, "app"),
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range recs {
				if err := tr.handle(r); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
	})
}
