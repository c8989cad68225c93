package etwsynth

import (
	"context"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Stream is a source of records made as they are read, never kept: Head,
// then N records that Make makes from their index, in that order. It
// serves the tests of the pipeline's bounds: the record streams that
// crafted files (a few hundred bytes that decompress to millions of
// records) give the pipeline, at no memory cost to the test. It has the
// methods of etw.Records and of its first-pass filter (EachKept).
type Stream struct {
	Head []record.Record
	N    int
	// Make fills r, which the stream reuses: its UserData may be a
	// buffer Make rewrites each time. The records of one processor
	// (CPU) must come in the order of its stream.
	Make func(i int, r *record.Record)
	// FirstPassDone, when set, is called when EachKept has delivered
	// its last record (a test cancels there).
	FirstPassDone func()
}

// checkEvery is how many records pass between checks of the context.
const checkEvery = 4096

// Each calls fn for every record.
func (s *Stream) Each(ctx context.Context, fn func(*record.Record) error) error {
	return s.each(ctx, nil, fn)
}

// EachKept calls keep for every record, in order, and fn for the Head's
// records and those keep accepts.
func (s *Stream) EachKept(ctx context.Context, keep func(*record.Record) bool, fn func(*record.Record) error) error {
	err := s.each(ctx, keep, fn)
	if err == nil && s.FirstPassDone != nil {
		s.FirstPassDone()
	}
	return err
}

func (s *Stream) each(ctx context.Context, keep func(*record.Record) bool, fn func(*record.Record) error) error {
	for i := range s.Head {
		r := s.Head[i]
		if keep != nil {
			keep(&r)
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	var r record.Record
	for i := 0; i < s.N; i++ {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		s.Make(i, &r)
		if keep != nil && !keep(&r) {
			continue
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return nil
}

// Stats returns no counters.
func (s *Stream) Stats() event.Stats { return event.Stats{} }
