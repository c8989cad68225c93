package etw

import (
	"context"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Records is a source of records in timestamp order that can be read more
// than once: an ETL file through the reader, or a slice in tests.
type Records interface {
	// Each calls fn for every record in timestamp order until fn returns
	// an error or the records end. It returns fn's error, or the source's
	// own error after delivering every intact record before it.
	Each(ctx context.Context, fn func(*record.Record) error) error
	// Stats returns the source's own counters (buffers, events lost,
	// corrupt buffers skipped); they go into the trailer.
	Stats() event.Stats
}

// keptRecords is implemented by Records that can leave out, before
// merging their streams by time, the records a pass does not want.
type keptRecords interface {
	// EachKept is Each over the records keep accepts, plus every record
	// that may precede the source's first record (its header) in time
	// order, whatever keep says: the first record delivered is the same
	// as Each's. keep sees every record once, not in time order but in
	// the order of its processor's stream (the first pass matches stack
	// walks to the records before them there).
	EachKept(ctx context.Context, keep func(*record.Record) bool, fn func(*record.Record) error) error
}

// decodableRecords is implemented by Records that can leave out of a
// pass, before merging their streams by time, records no decoder knows
// (kernel.MayDecode is false), and count them instead.
type decodableRecords interface {
	// EachDecodable is Each, except that it may report records for which
	// secondWants is false to undecodable, with a count, instead of
	// passing them to fn (the record undecodable gets has only the
	// fields that identify its kind). The records passed to fn come in
	// the order Each would pass them.
	EachDecodable(ctx context.Context, fn func(*record.Record) error, undecodable func(r *record.Record, n uint64)) error
}

// Run reads src in two passes into sink: the first collects every name,
// rundown, process, thread and volume fact (the end-of-trace file rundown
// then names events from the whole trace); the second pairs, resolves and
// emits. An error from the source (a damaged file) ends the trace after
// every intact event was delivered, with the trailer, and is returned.
func Run(ctx context.Context, src Records, opts Options, sink event.Sink) error {
	p := NewPipeline(sink, opts)
	p.setMode(modeCollect)
	var err1 error
	if k, ok := src.(keptRecords); ok {
		// The first pass wants only the records that carry facts: the
		// others are counted or rejected before the source merges them.
		p.first.kept = true
		err1 = k.EachKept(ctx, p.first.keep, p.Push)
		p.first.kept = false
	} else {
		err1 = src.Each(ctx, p.Push)
	}
	if err1 != nil && ctx.Err() != nil {
		return err1
	}
	if err := p.startReplay(ctx); err != nil {
		return err
	}
	var err2 error
	if d, ok := src.(decodableRecords); ok {
		// The second pass counts the records no decoder knows (most of
		// a trace with other providers) without the merge.
		err2 = d.EachDecodable(ctx, p.Push, p.countUndecodable)
	} else {
		err2 = src.Each(ctx, p.Push)
	}
	st := src.Stats()
	if p.err != nil {
		return p.err
	}
	if err2 != nil && ctx.Err() != nil {
		// Cancelled: end the stream cleanly with what was emitted.
		_ = p.Close(&st)
		return err2
	}
	if cerr := p.Close(&st); cerr != nil {
		return cerr
	}
	if err2 == nil {
		err2 = err1
	}
	return err2
}

// startReplay turns a collecting pipeline into the second pass: the
// tables are complete and stay as they are; pairing and emission start
// afresh. It returns ctx's error when ctx is done before the first pass's
// stacks are assembled.
func (p *Pipeline) startReplay(ctx context.Context) error {
	p.setMode(modeReplay)
	anyEnd := false
	for i := range p.expectEnd {
		p.expectEnd[i] = p.opts.ExpectOpEnd || p.first.opEnds[i] > 0
		anyEnd = anyEnd || p.expectEnd[i]
	}
	p.links.linking = anyEnd && (p.opts.DiskIOInit || p.first.diskInit > 0)
	p.chooseImages()
	p.dec = kernel.NewDecoder()
	p.records = 0
	stacks, err := p.first.end(ctx, p.dec, p.tally)
	if err != nil {
		return err
	}
	p.stackIDs.Expect(stacks)
	p.lastTime = 0
	p.names.ForgetDOS()
	return nil
}

// SliceRecords is a Records over records in memory (tests, fakes).
type SliceRecords struct {
	Recs []record.Record
	// Err, when set, is returned after the records (a damaged source).
	Err error
	// Counters are returned by Stats.
	Counters event.Stats
}

// Each implements Records.
func (s *SliceRecords) Each(ctx context.Context, fn func(*record.Record) error) error {
	for i := range s.Recs {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := fn(&s.Recs[i]); err != nil {
			return err
		}
	}
	return s.Err
}

// Stats implements Records.
func (s *SliceRecords) Stats() event.Stats { return s.Counters }
