package blockio

import (
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
	if t.witness == nil || t.objs.ForgetBio == nil || t.opts.SweepAge < 0 {
		return
	}
	now := t.witness.now()
	age := uint64(t.opts.SweepAge)
	if now < age+sweepMargin {
		return
	}
	var (
		key  uint64
		info blockioBioInfo
		old  []Record
	)
	it := t.objs.Bios.Iterate()
	for len(old) < maxSweep && it.Next(&key, &info) {
		if info.QueueTs != 0 && info.QueueTs <= now-age {
			old = append(old, recordOf(key, &info))
		}
	}
	// An error ends the listing early (the map changes under it): the
	// next sweep sees the rest.
	var n uint64
	for i := range old {
		r := &old[i]
		if !t.answer(r, now-sweepMargin) {
			continue // still in flight, as far as anyone saw
		}
		ret, err := t.objs.ForgetBio.Run(&ebpf.RunOptions{Context: forgetArgs{Bio: r.Bio, QueueTS: r.QueueTS}})
		if err != nil {
			t.opts.warnf("block I/O: end a bio whose completion no program saw: " + err.Error())
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
