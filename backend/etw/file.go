package etw

import (
	"context"
	"fmt"
	"sync"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// ReadFile reads the .etl file at path into sink, in two passes (see
// Run). A file that is damaged further on delivers every intact event and
// the trailer, then returns the damage as an error naming the file.
func ReadFile(ctx context.Context, path string, opts Options, sink event.Sink) error {
	r, err := etl.Open(path, etl.Options{Map: true})
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer r.Close()
	if err := r.Guard(func() error { return Run(ctx, FileRecords(r), opts, sink) }); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// FileRecords adapts an ETL reader to Records: each pass streams the file
// again, merged by timestamp. It tells the reader (etl.Reader.Compact)
// that the second pass of Run wants only the records a decoder may know,
// so that the buffers the first pass caches hold only those.
func FileRecords(r *etl.Reader) Records {
	r.Compact(decodable())
	return &fileRecords{r: r}
}

// decodable selects the records the second pass wants (secondWants): the
// others are only counted, by kind. Built on first use.
var decodable = sync.OnceValue(func() *etl.Selection { return etl.NewSelection(secondWants) })

type fileRecords struct {
	r     *etl.Reader
	stats event.Stats
}

func (f *fileRecords) Each(ctx context.Context, fn func(*record.Record) error) error {
	st, err := f.r.Read(ctx, fn)
	f.stats = st
	return err
}

// EachKept implements keptRecords: the reader applies keep before its
// merge, to every record. Records at or before the header record (time
// 0) are always kept, so that the first record is the one Each would
// deliver first.
func (f *fileRecords) EachKept(ctx context.Context, keep func(*record.Record) bool, fn func(*record.Record) error) error {
	t0 := f.r.Header().HeaderTimestamp
	st, err := f.r.ReadKept(ctx, func(r *record.Record) bool { return keep(r) || r.Timestamp <= t0 }, fn)
	f.stats = st
	return err
}

// EachDecodable implements decodableRecords.
func (f *fileRecords) EachDecodable(ctx context.Context, fn func(*record.Record) error, undecodable func(*record.Record, uint64)) error {
	st, err := f.r.ReadSelected(ctx, decodable(), undecodable, fn)
	f.stats = st
	return err
}

func (f *fileRecords) Stats() event.Stats { return f.stats }
