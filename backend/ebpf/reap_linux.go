package ebpf

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/iotrace/iotrace/event"
)

// reapEvery is how often the reader looks for processes and threads it
// keeps whose exit record never came (lost to a full ring buffer): under
// a load that loses records, their tables would otherwise grow for as
// long as the trace runs.
const reapEvery = 30 * time.Second

// statReaped counts the processes forgotten so.
const statReaped = "processes whose exit was not seen, forgotten once gone from /proc (their descriptors' names end then)"

// reaper remembers what it found gone at its last pass: a process is
// forgotten only when it is still gone a pass later, so that one whose
// exit record is merely not read yet is never forgotten before it.
type reaper struct {
	next    time.Time
	missing map[uint32]bool // ids gone from /proc at the last pass
	reaped  uint64
}

// reap forgets, every reapEvery, the processes and threads the tracker
// keeps that were gone from /proc at this pass and the last, as their
// exit record would have (at the time of this pass).
func (r *run) reap(now time.Time) {
	rp := &r.reaper
	if now.Before(rp.next) {
		return
	}
	rp.next = now.Add(reapEvery)
	gone := func(id uint32) bool {
		_, err := os.Stat(filepath.Join(r.fs.Root, strconv.FormatUint(uint64(id), 10)))
		return os.IsNotExist(err)
	}
	ts := int64(bootNanos() - r.origin)
	missing := map[uint32]bool{}
	for _, pid := range r.tr.table.Pids() {
		if !gone(pid) {
			continue
		}
		if rp.missing[pid] {
			r.tr.exited(pid, pid, ts)
			rp.reaped++
			continue
		}
		missing[pid] = true
	}
	// Threads (their names and pending paths, by thread id).
	for _, m := range []map[uint32]bool{keys(r.tr.comms), keys(r.tr.pending)} {
		for tid := range m {
			if !gone(tid) {
				continue
			}
			if rp.missing[tid] {
				delete(r.tr.comms, tid)
				delete(r.tr.pending, tid)
				continue
			}
			missing[tid] = true
		}
	}
	rp.missing = missing
}

// keys returns the keys of m as a set.
func keys[V any](m map[uint32]V) map[uint32]bool {
	out := make(map[uint32]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// stats adds the reaper's count to s.
func (rp *reaper) stats(s *event.Stats) {
	if rp.reaped != 0 {
		s.Add(event.CountInfo, statReaped, rp.reaped)
	}
}
