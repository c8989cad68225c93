package live

import (
	"time"

	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
)

// reorderTick is how often held events are checked for release.
const reorderTick = 100 * time.Millisecond

// consume feeds queued records to the pipeline, in time order through ro
// (nil: in arrival order); markers go straight to the sink, in order.
// now returns the session clock. sf (nil: none) trims stack walks; ir
// (nil: none) puts each loaded image's identity after its Image record,
// waiting at most drainTimeout for the last ones at the end.
func consume(q *queue, ro *reorderer, now func() int64, pl recordPusher, out *liveSink, sf *stackFilter,
	ir *imageResolver, drainTimeout time.Duration) error {
	var err error
	push := func(it *item) {
		if err != nil {
			return // the sink failed: drain without delivering
		}
		switch {
		case it.rec.Provider == record.GUID(MarkerGUID) && it.rec.Opcode == ownprovider.OpcodeMarker:
			err = out.marker(&it.rec, pl.NewID())
		case sf != nil && isStackWalk(&it.rec) && !sf.apply(&it.rec):
			// none of the frames asked for
		default:
			err = pl.Push(&it.rec)
		}
	}
	if ro == nil {
		for it := range q.work {
			push(it)
			if ir != nil {
				if id := ir.lookupNow(&it.rec); id != nil {
					push(id)
				}
			}
			q.done(it)
		}
		return err
	}
	var identities <-chan imageAnswer // nil: never ready
	answer := func(a imageAnswer) {
		ro.answered(a.seq)
		if a.it != nil {
			if ro.released && a.it.rec.Timestamp < ro.last {
				// Its image went to the decoder without it:
				// counted once, here, not passed on.
				ir.late()
				return
			}
			ro.add(a.it)
		}
	}
	if ir != nil {
		ir.start()
		identities = ir.out
	}
	tick := time.NewTicker(reorderTick)
	defer tick.Stop()
	for {
		select {
		case it, ok := <-q.work:
			if !ok {
				if ir != nil {
					ir.drain(drainTimeout, answer)
				}
				ro.releaseAll(push)
				return err
			}
			back := ro.swap(it)
			if ir != nil {
				switch now, pending := ir.submit(&it.rec, it.seq); {
				case pending:
					ro.hold(it)
				case now != nil: // its version read already
					ro.add(now)
				}
			}
			q.done(back)
			if ro.held() > ro.limit {
				ro.release(now(), push)
			}
		case a := <-identities:
			answer(a)
		case <-tick.C:
			ro.release(now(), push)
		}
	}
}

// recordPusher takes decoded-to-be records: the etw pipeline.
type recordPusher interface {
	Push(r *record.Record) error
	// NewID numbers an event made beside the pipeline (a marker) in the
	// pipeline's ID sequence.
	NewID() uint64
}

// clockTicks converts d to ticks of the session clock.
func clockTicks(d time.Duration, clockType uint32, qpcFreq int64) int64 {
	if clockType == ClockSystemTime {
		return d.Nanoseconds() / 100
	}
	return int64(d.Seconds() * float64(qpcFreq))
}
