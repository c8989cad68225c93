package tracefile

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/iotrace/iotrace/internal/synth"
)

// writeLog is a file that notes, after each write, where the file ends
// and how many events the writer says its whole chunks hold (Written).
type writeLog struct {
	buf    bytes.Buffer
	w      *Writer
	ends   []int64
	events []uint64
}

func (l *writeLog) Write(b []byte) (int, error) {
	n, err := l.buf.Write(b)
	// Written is updated after the write returns: note the write itself.
	l.ends = append(l.ends, int64(l.buf.Len()))
	l.events = append(l.events, 0)
	return n, err
}

// shortRecording writes a trace of about 90 KB as "iotrace record" does:
// the writer's default chunk sizes, a Flush after the first second (here
// at 80 % of the events, most of a short recording coming in its first
// second), End. It returns the file, the writes' ends with the events
// whole in the file after each, where each event would end in the file
// were it flushed right after it (the file's offset plus the chunk built
// so far), and where the first second's data ends.
func shortRecording(t *testing.T, opts WriterOptions) (file []byte, log *writeLog, at []int64, firstSecond int64) {
	t.Helper()
	tr := synth.Trace(synth.Options{Events: 3500, Seed: 9, Resolved: true})
	log = &writeLog{}
	w := NewWriter(log, opts)
	log.w = w
	account := func(err error) {
		t.Helper()
		must(t, err)
		if n := len(log.events); n > 0 {
			ev, off := w.Written()
			if off != log.ends[n-1] {
				t.Fatalf("Written says %d, the file ends at %d", off, log.ends[n-1])
			}
			log.events[n-1] = ev
		}
	}
	account(w.Begin(&tr.Header))
	flushAt := len(tr.Events) * 8 / 10
	for _, it := range tr.Order {
		if it.Kind == synth.ItemFact {
			account(w.Fact(&tr.Facts[it.Index]))
			continue
		}
		account(w.Event(&tr.Events[it.Index]))
		at = append(at, w.Offset()+int64(w.enc.size()))
		if len(at) == flushAt {
			account(w.Flush())
			firstSecond = w.Offset()
		}
	}
	account(w.End(&tr.Trailer))
	return log.buf.Bytes(), log, at, firstSecond
}

// checkCuts cuts file at every offset from firstSecond on, by step, and
// reads it: the events kept must be those of the chunks whole before the
// cut (the writer's own account), and they must hold every event written
// in the first third of the bytes before the cut (with chunks that double,
// a cut loses at most the chunk being written: about the last half, less
// the string tables chunks repeat). It returns the first failure.
func checkCuts(file []byte, log *writeLog, at []int64, from int64, step int) error {
	for cut := from; cut <= int64(len(file)); cut += int64(step) {
		r, err := NewReader(bytes.NewReader(file[:cut]))
		if err != nil {
			return fmt.Errorf("cut at %d: %v", cut, err)
		}
		var s countSink
		runErr := r.Run(context.Background(), &s)
		if cut < int64(len(file)) && runErr == nil {
			return fmt.Errorf("cut at %d of %d: no error", cut, len(file))
		}
		var whole uint64
		for i, end := range log.ends {
			if end <= cut {
				whole = log.events[i]
			}
		}
		if uint64(s.events) != whole {
			return fmt.Errorf("cut at %d: %d events kept, the writer had %d whole before it", cut, s.events, whole)
		}
		firstThird := 0
		for _, a := range at {
			if a <= cut/3 {
				firstThird++
			}
		}
		if s.events < firstThird {
			return fmt.Errorf("cut at %d of %d: %d events kept, %d were written in the first %d bytes", cut, len(file), s.events, firstThird, cut/3)
		}
	}
	return nil
}

// TestShortRecordingCutKeepsWhatWasWritten writes a short recording
// (about 90 KB, most of it in its first second) as record does and cuts
// it at every 512 bytes after its first second's data: every cut keeps
// the events of every chunk written whole before it, and those are most
// of the events written before it (a cut loses at most the chunk being
// written, and early chunks are small; see checkCuts). With chunks of one size (the
// writer before FirstChunkSize), the first second was one chunk and a
// cut inside the rest lost it: checkCuts says so.
func TestShortRecordingCutKeepsWhatWasWritten(t *testing.T) {
	file, log, at, firstSecond := shortRecording(t, WriterOptions{})
	if len(file) < 60<<10 || len(file) > 150<<10 {
		t.Fatalf("the recording is %d bytes, not a short one of about 90 KB", len(file))
	}
	if err := checkCuts(file, log, at, firstSecond, 512); err != nil {
		t.Error(err)
	}
	// From its first chunk on, too: a cut inside the first second keeps
	// its whole chunks.
	if err := checkCuts(file, log, at, int64(DefaultFirstChunkSize)*2, 512); err != nil {
		t.Error(err)
	}

	old, oldLog, oldAt, _ := shortRecording(t, WriterOptions{FirstChunkSize: -1})
	if err := checkCuts(old, oldLog, oldAt, int64(DefaultFirstChunkSize)*2, 512); err == nil {
		t.Error("chunks of one size pass the check: it checks nothing")
	} else {
		t.Logf("chunks of one size, as before: %v", err)
	}
}

// TestChunkSizesGrow: records chunks start at FirstChunkSize and double
// up to ChunkSize; a negative FirstChunkSize makes them all ChunkSize.
func TestChunkSizesGrow(t *testing.T) {
	tr := synth.Trace(synth.Options{Events: 40000, Seed: 10})
	for _, c := range []struct {
		opts  WriterOptions
		first int
	}{
		{WriterOptions{}, DefaultFirstChunkSize},
		{WriterOptions{FirstChunkSize: 1000, ChunkSize: 9000}, 1000},
		{WriterOptions{FirstChunkSize: -1}, DefaultChunkSize},
		{WriterOptions{FirstChunkSize: 1 << 30}, DefaultChunkSize},
	} {
		file := write(t, tr, c.opts)
		max := c.opts.ChunkSize
		if max == 0 {
			max = DefaultChunkSize
		}
		limit := c.first
		var sizes []int
		for _, ch := range chunkMap(t, file) {
			if ch.typ == chunkRecords {
				sizes = append(sizes, ch.end-ch.off-chunkHeaderSize)
			}
		}
		for i, n := range sizes[:len(sizes)-1] { // the last is what End found
			// A chunk is written by the record that takes it to its limit.
			if n < limit || n > limit+2048 {
				t.Fatalf("%+v: chunk %d is %d bytes, its limit %d (sizes %v)", c.opts, i, n, limit, sizes)
			}
			limit = min(2*limit, max)
		}
	}
}
