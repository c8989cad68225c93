package tracefile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestShortEventsSections: a records chunk (CRC intact) whose events
// section ends inside an event, at every byte, with the event's first
// varint in each encoding form, is damage and never a panic, in both
// format versions.
func TestShortEventsSections(t *testing.T) {
	eachVersion(t, func(t *testing.T, version int) {
		var buf bytes.Buffer
		w := NewWriter(&buf, WriterOptions{Version: version})
		must(t, w.Begin(&event.Header{}))
		must(t, w.End(&event.Trailer{}))
		empty := buf.Bytes()
		up := appendUvarint
		if version == 1 {
			up = appendLEB
		}
		firsts := [][]byte{{0x00}, {0x80}, up(nil, 0), up(nil, 1<<20), up(nil, 1<<60)}
		for _, first := range firsts {
			for cut := 0; cut <= 12; cut++ {
				events := append(bytes.Clone(first), bytes.Repeat([]byte{0xff}, 12)...)[:cut]
				c := appendChunk(nil, chunkRecords, func(p []byte) []byte {
					p = up(p, 0)         // no strings
					p = up(p, 1)         // a facts section of one byte:
					p = up(p, 0)         // no facts
					p = up(p, uint64(1)) // one event
					return append(p, events...)
				})
				chunks := chunkMap(t, empty)
				last := chunks[len(chunks)-1]
				file := append(append(append([]byte(nil), empty[:last.off]...), c...), empty[last.off:]...)
				r, err := NewReader(bytes.NewReader(file))
				if err != nil {
					t.Fatal(err)
				}
				var s countSink
				err = r.Run(context.Background(), &s)
				if cut == 0 {
					// The event count exceeds the bytes left.
					damageOf(t, err)
					continue
				}
				if err == nil && s.events != 1 {
					t.Fatalf("first % x, cut %d: no damage and %d events", first, cut, s.events)
				}
			}
		}
	})
}

type countSink struct{ events, facts int }

func (*countSink) Begin(*event.Header) error  { return nil }
func (s *countSink) Event(*event.Event) error { s.events++; return nil }
func (s *countSink) Fact(*event.Fact) error   { s.facts++; return nil }
func (*countSink) End(*event.Trailer) error   { return nil }

// failingWriter takes n bytes, then fails every write (a full disk); a
// write that crosses the limit writes its first part.
type failingWriter struct {
	buf bytes.Buffer
	n   int
}

func (f *failingWriter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		k := f.n
		f.buf.Write(b[:k])
		f.n = 0
		return k, errors.New("no space left on device")
	}
	f.n -= len(b)
	return f.buf.Write(b)
}

// TestWrittenAfterWriteError: after a write error, Written says how many
// events the whole chunks hold and where they end; the file cut there
// reads exactly those events, then says it was cut short.
func TestWrittenAfterWriteError(t *testing.T) {
	fw := &failingWriter{n: 100000}
	w := NewWriter(fw, WriterOptions{ChunkSize: 8 << 10})
	must(t, w.Begin(&event.Header{OS: "linux"}))
	var err error
	sent := 0
	for i := 1; err == nil && i < 1000000; i++ {
		e := event.New()
		e.ID, e.Time, e.Op, e.Path = uint64(i), int64(i)*1000, event.OpRead, fmt.Sprintf("/data/file-%d", i%97)
		err = w.Event(&e)
		sent++
	}
	if err == nil {
		t.Fatal("the writer never failed")
	}
	events, off := w.Written()
	if events == 0 || events >= uint64(sent) || off > int64(fw.buf.Len()) || off == int64(fw.buf.Len()) {
		t.Fatalf("Written = %d events to offset %d; %d sent, %d bytes reached the disk", events, off, sent, fw.buf.Len())
	}
	r, err := NewReader(bytes.NewReader(fw.buf.Bytes()[:off]))
	if err != nil {
		t.Fatal(err)
	}
	var s countSink
	err = r.Run(context.Background(), &s)
	if s.events != int(events) || err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("the file cut at %d reads %d events (%v), want %d and cut short", off, s.events, err, events)
	}
}
