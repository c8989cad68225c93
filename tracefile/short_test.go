package tracefile

import (
	"bytes"
	"context"
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
