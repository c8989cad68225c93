package blockio

// Completions of page-cache fills that no program saw, for the page-cache
// provenance of the reads that returned their pages (backend/ebpf,
// provenance.go).
//
// A read's record can come before its fill's completion record: when the
// kernel skipped the programs on that completion (docs/block.md,
// "Completions the kernel does not deliver"), the completion record
// comes only when the bio's address is reused, or at stop. The read
// proves the fill complete (it returned its pages), and the witness has
// the completion's time. Tracer.FillDone looks it up then; both it and
// the later report of the bio as unseen take the answer from fillAnswers,
// since the witness hands each completion out once.

// FillQuery is a page-cache fill whose completion record has not come, as
// its queue record (bpf/pagecache.h) describes it. Times are the tracer's
// clock.
type FillQuery struct {
	Bio    uint64 // struct bio *
	Ino    uint64
	InoDev uint32 // the file's file system (kernel dev_t)
	Dev    uint32 // the bio's block device (kernel dev_t)
	Sector uint64 // its first sector, relative to Dev
	Bytes  uint32
	After  uint64 // its queue record's time: it completed later
	Before uint64 // the end of a read that returned its pages: it completed earlier
}

// fillAnswer is the completion the witness gave for one bio.
type fillAnswer struct {
	ino    uint64
	inoDev uint32
	// queueTS is when the bio was queued (or, from FillDone, its queue
	// record's time, a little later): with the completion's time it
	// tells the bios at one address apart.
	queueTS uint64
	w       witnessRec
}

// maxFillAnswers bounds the answers kept (a few per completion no program
// saw: the kernel skips 0.1-0.4 % of them, docs/block.md); when full they
// are all dropped, and a later report of those bios finds no completion.
const maxFillAnswers = 1 << 14

// fillAnswers are the witness's answers by bio address.
type fillAnswers map[uint64]fillAnswer

// put keeps a's answer for bio.
func (m *fillAnswers) put(bio uint64, a fillAnswer) {
	if *m == nil || len(*m) >= maxFillAnswers {
		*m = make(fillAnswers)
	}
	(*m)[bio] = a
}

// take returns and forgets the answer for bio queued at queueTS: one
// whose completion came after that queue (an address is reused only
// after its bio completed), given for that bio's queue or later.
func (m fillAnswers) take(bio, queueTS uint64) (witnessRec, bool) {
	a, ok := m[bio]
	if !ok || a.w.ts <= queueTS || a.queueTS < queueTS {
		return witnessRec{}, false
	}
	delete(m, bio)
	return a.w, true
}

// of returns the answer for q's bio, if it was a fill of q's file queued
// by q's queue and completed in (q.After, q.Before).
func (m fillAnswers) of(q *FillQuery) (uint64, bool) {
	a, ok := m[q.Bio]
	if !ok || a.ino != q.Ino || a.inoDev != q.InoDev || a.queueTS > q.After || a.w.ts <= q.After || a.w.ts >= q.Before {
		return 0, false
	}
	return a.w.ts, true
}
