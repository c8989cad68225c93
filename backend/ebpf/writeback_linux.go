package ebpf

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/event"
)

// dirtyPages returns the pages of the files at paths that are dirty or
// under writeback (cachestat(2)), and how many files could not be looked
// at (removed, renamed, not regular, a kernel before 6.5).
func dirtyPages(paths map[string]struct{}) (pages uint64, unchecked int) {
	for p := range paths {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			unchecked++
			continue
		}
		var cs unix.Cachestat_t
		if err := unix.Cachestat(uint(fd), &unix.CachestatRange{}, &cs, 0); err != nil {
			unchecked++
		} else {
			pages += cs.Dirty + cs.Writeback
		}
		unix.Close(fd)
	}
	return pages, unchecked
}

// writebackPoll is how often the files a command wrote are looked at
// while the trace waits for their writeback.
const writebackPoll = 100 * time.Millisecond

// writebackWait is the state of the wait for a command's writeback.
type writebackWait struct {
	started   bool
	exited    time.Time
	deadline  time.Time
	next      time.Time
	atExit    uint64
	unchecked int
}

// commandDone is called at each poll once the command has exited; it
// reports whether the trace may stop: at once without
// Options.WaitWriteback, else when the files the command wrote have no
// dirty page left or the wait's timeout is reached (counted).
func (r *run) commandDone() bool {
	w := &r.wb
	now := time.Now()
	if !w.started {
		w.started, w.exited = true, now
		w.deadline = now.Add(r.opts.WaitWriteback)
		w.atExit, w.unchecked = dirtyPages(r.tr.written)
		r.stats.Set(event.CountInfo, "pages the command left dirty or under writeback when it exited (in the files it wrote)", w.atExit)
		if w.unchecked != 0 {
			r.stats.Set(event.CountInfo, "files the command wrote whose dirty pages could not be counted (removed, renamed or not regular)", uint64(w.unchecked))
		}
		if r.tr.writtenOver != 0 {
			r.stats.Set(event.CountInfo, fmt.Sprintf("files the command wrote beyond the %d looked at for dirty pages", maxWritten), r.tr.writtenOver)
		}
		w.next = now.Add(writebackPoll)
		return r.opts.WaitWriteback <= 0 || w.atExit == 0
	}
	if now.Before(w.next) {
		return false
	}
	w.next = now.Add(writebackPoll)
	pages, _ := dirtyPages(r.tr.written)
	if pages != 0 && now.Before(w.deadline) {
		return false
	}
	r.stats.Set(event.CountInfo, "ms traced after the command exited, waiting for its writeback (--wait-writeback)", uint64(now.Sub(w.exited).Milliseconds()))
	if pages != 0 {
		r.stats.Set(event.CountUnresolved, fmt.Sprintf("--wait-writeback reached its timeout (%v): pages of the command's files still dirty or under writeback", r.opts.WaitWriteback), pages)
	}
	return true
}
