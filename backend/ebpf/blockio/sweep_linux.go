package blockio

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/iotrace/iotrace/event"
)

// The sweep. A bio whose completion no program saw (docs/block.md,
// "Completions the kernel does not deliver") stays in the in-flight map
// until its address is queued again or the tracer stops: a live reader
// (serve's metrics) would count it late, on a disk gone quiet only at the
// end. Once a second Run lists the bios in flight for longer than
// Options.SweepAge and, for those the witness saw complete, runs
// forget_bio, which sends their record now, as the next queue of the
// address would (forget_unseen: the page-cache side hears of it too).

// sweepMargin: a completion the witness recorded this recently may still
// be on its way through the programs (they run just after the witness's
// probe); a bio is swept only on an older one.
const sweepMargin = 10_000_000 // ns

// maxSweep bounds the bios one sweep looks at.
const maxSweep = 4096

// forgetArgs is forget_bio's context (struct forget_args).
type forgetArgs struct {
	Bio     uint64
	QueueTS uint64
}

// sweep ends the bios queued more than Options.SweepAge ago whose
// completion the witness has and no program saw.
func (t *Tracer) sweep() {
	if t.witness == nil || t.objs.ForgetBio == nil || t.opts.SweepAge < 0 || t.sweepFailed {
		return
	}
	now := t.witness.now()
	age := uint64(t.opts.SweepAge)
	if now < age+sweepMargin {
		return
	}
	old, err := t.oldBios(now - age)
	if err != nil {
		t.stopSweeping(err)
		return
	}
	var n uint64
	for i := range old {
		r := &old[i]
		if !t.answer(r, now-sweepMargin) {
			continue // still in flight, as far as anyone saw
		}
		ret, err := t.objs.ForgetBio.Run(&ebpf.RunOptions{Context: forgetArgs{Bio: r.Bio, QueueTS: r.QueueTS}})
		if err != nil {
			t.stopSweeping(err)
			return
		}
		if ret == 1 {
			n++
		}
	}
	if n != 0 {
		t.mu.Lock()
		t.user.Add(event.CountInfo, StatSwept, n)
		t.mu.Unlock()
	}
}

// stopSweeping warns that the sweep failed and turns it off: the bios it
// would have ended come when their address is reused, or at stop.
func (t *Tracer) stopSweeping(err error) {
	t.sweepFailed = true
	t.opts.warnf("block I/O: completions no program saw will come late (when the bio's address is reused, or at stop): " + err.Error())
}

// defaultSweepBatch is how many bios one system call lists
// (BPF_MAP_LOOKUP_BATCH): a map with thousands in flight is read in a few
// calls, not two per bio.
const defaultSweepBatch = 256

// oldBios lists the bios queued at or before upTo, at most maxSweep
// (those of untraced processes' page-cache reads too: forget_bio tells
// the page-cache side).
func (t *Tracer) oldBios(upTo uint64) ([]Record, error) {
	batch := cmp.Or(t.opts.sweepBatch, defaultSweepBatch)
	keys := make([]uint64, batch)
	vals := make([]blockioBioInfo, batch)
	var (
		cur ebpf.MapBatchCursor
		old []Record
	)
	for len(old) < maxSweep {
		n, err := t.objs.Bios.BatchLookup(&cur, keys, vals, nil)
		for i := range n {
			if v := &vals[i]; v.QueueTs != 0 && v.QueueTs <= upTo {
				old = append(old, recordOf(keys[i], v))
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break // the end
		}
		if err != nil {
			return old, fmt.Errorf("list the bios in flight: %w", err)
		}
	}
	return old, nil
}

// answer takes r's completion from the witness, completed before time
// before, for the record forget_bio will send (unseen takes it from
// t.answers), and reports whether the witness had it.
func (t *Tracer) answer(r *Record, before uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.answers.has(r.Bio, r.QueueTS) {
		return true // FillDone took it already
	}
	w, miss := t.witness.find(r, before)
	if miss != missNone {
		return false
	}
	t.answers.put(r.Bio, fillAnswer{ino: r.Inode, inoDev: r.InoDev, queueTS: r.QueueTS, w: w})
	return true
}
