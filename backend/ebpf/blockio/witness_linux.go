package blockio

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend/ebpf/ftrace"
	"github.com/iotrace/iotrace/event"
)

// witnessPrefix names the tracefs instances of iotrace processes
// (iotrace-PID-RANDOM); those of dead processes are removed at Open.
const witnessPrefix = "iotrace"

// witness runs the tracefs instance that records every block completion
// into the kernel's own trace buffer, and looks up there the bios whose
// completion no program saw.
type witness struct {
	in        *ftrace.Instance
	log       *witnessLog
	layout    OpfLayout
	monotonic bool
	sysfs     string
	disks     map[uint32]diskPos

	// removed is closed once the instance finish began removing is
	// gone (nil: no removal under way).
	removed chan struct{}

	found      uint64 // completions found
	miss       [numMisses]uint64
	lostPages  uint64 // missed events the pages reported
	dropped    uint64 // the instance's overrun at Close
	readErrors uint64
	warn       func(string)
	warned     bool
}

// diskPos is where a device's sectors lie on its disk.
type diskPos struct {
	disk  uint32 // kernel dev_t
	start uint64 // first sector of a partition
}

// openWitness removes the instances of dead iotrace processes, then
// creates this tracer's. Its layout is the tracer's to set.
func openWitness(opts *Options) (*witness, error) {
	if n, err := ftrace.RemoveStale("", witnessPrefix); err != nil {
		opts.warnf("block I/O: removing stale tracefs instances: " + err.Error())
	} else if n > 0 {
		opts.warnf(fmt.Sprintf("block I/O: removed %d tracefs instance(s) left by iotrace processes that are gone", n))
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	clock := "boot"
	if opts.Monotonic {
		clock = "mono"
	}
	in, err := ftrace.Open(ftrace.Options{
		Name:     witnessPrefix + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(suffix[:]),
		Events:   WitnessEvents,
		Clock:    clock,
		BufferKB: opts.WitnessBufferKB,
	})
	if err != nil {
		return nil, err
	}
	w := &witness{in: in, log: newWitnessLog(opts.WitnessKeep), layout: DefaultOpfLayout(), monotonic: opts.Monotonic,
		sysfs: opts.Sysfs, disks: map[uint32]diskPos{}, warn: opts.Warn}
	for _, f := range in.Formats() {
		if err := w.log.addFormat(f); err != nil {
			in.Close()
			return nil, fmt.Errorf("block completion witness: %w", err)
		}
	}
	if len(in.Formats()) == 0 {
		in.Close()
		return nil, fmt.Errorf("block completion witness: the kernel has none of %s", strings.Join(WitnessEvents, ", "))
	}
	return w, nil
}

// drain reads what the instance's buffers hold now (nothing once
// finished).
func (w *witness) drain() {
	if w.in == nil {
		w.log.settle(math.MaxUint64) // all the instance gave is read
		return
	}
	readAt := w.now()
	defer w.log.settle(readAt)
	missed, err := w.in.Read(func(_ int, ts uint64, rec []byte) { w.log.add(ts, rec) })
	if missed > 0 {
		w.lostPages += missed
		w.log.lost(w.now())
		if !w.warned && w.warn != nil {
			w.warned = true
			w.warn("block I/O: the block completion witness (tracefs instance) lost completions: its buffer overran")
		}
	}
	if err != nil {
		w.readErrors++
		w.log.lost(w.now())
	}
}

// now reads the tracer's clock (the instance's trace clock).
func (w *witness) now() uint64 {
	var ts unix.Timespec
	clk := int32(unix.CLOCK_BOOTTIME)
	if w.monotonic {
		clk = unix.CLOCK_MONOTONIC
	}
	if unix.ClockGettime(clk, &ts) != nil {
		return math.MaxUint64
	}
	return uint64(ts.Nano())
}

// saw notes r, a completion the programs saw: its witness record is
// taken for it once read (witnessLog.settle).
func (w *witness) saw(r *Record) { w.log.saw(seenRec{q: w.query(r), ts: r.DoneTS}) }

// lookup finds the completion of r, a bio no program saw complete, before
// time before (the tracer's clock; 0: now). It drains the instance first:
// that completion came before r's loss was found, so it is in the buffer
// by now.
func (w *witness) lookup(r *Record, before uint64) (witnessRec, bool) {
	rec, miss := w.find(r, before)
	if miss != missNone {
		w.miss[miss]++
		return rec, false
	}
	w.found++
	return rec, true
}

// find is lookup without counting: a page-cache fill's completion looked
// up for provenance (Tracer.FillDone) may have been seen by the programs,
// its record late.
func (w *witness) find(r *Record, before uint64) (witnessRec, witnessMiss) {
	if r.Flags&RecRemapped != 0 {
		return witnessRec{}, missRemapped
	}
	w.drain()
	if before == 0 {
		before = w.now()
	}
	q := w.query(r)
	q.after, q.before = r.QueueTS, before
	return w.log.find(q)
}

// query is r's bio as the instance records it: on its disk (a partition's
// sectors moved by its start), its direction as a letter.
func (w *witness) query(r *Record) witnessQuery {
	pos := w.disk(r.Dev)
	var buf [8]byte
	return witnessQuery{dev: pos.disk, sector: r.Sector + pos.start, bytes: r.Bytes, op: opLetter(w.layout.RWBS(buf[:0], r.Opf))}
}

// disk returns where dev lies: itself from sector 0, or, for a partition,
// its disk from the partition's start (sysfs).
func (w *witness) disk(dev uint32) diskPos {
	if p, ok := w.disks[dev]; ok {
		return p
	}
	p := diskPos{disk: dev}
	maj, min := KernelDev(dev)
	link := filepath.Join(w.sysfs, "dev", "block", strconv.FormatUint(uint64(maj), 10)+":"+strconv.FormatUint(uint64(min), 10))
	if start, ok := readSysfsUint(filepath.Join(link, "start")); ok {
		if target, err := os.Readlink(link); err == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(link), target)
			}
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(target), "dev")); err == nil {
				if dmaj, dmin, ok := parseMajMin(strings.TrimSpace(string(b))); ok {
					p = diskPos{disk: dmaj<<20 | dmin, start: start}
				}
			}
		}
	}
	w.disks[dev] = p
	return p
}

func readSysfsUint(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

// finish reads the instance's buffers for the last time, keeps what they
// lost, and removes the instance in the background (close waits for
// that): removing it waits for the kernel's tracepoint grace periods,
// 7-34 ms here, while lookups need only what was read. A removal that
// fails is warned about.
func (w *witness) finish() {
	if w.in == nil {
		return
	}
	w.drain()
	w.dropped = w.in.Dropped()
	in := w.in
	w.in = nil
	w.removed = make(chan struct{})
	go func() {
		defer close(w.removed)
		if err := in.Close(); err != nil && w.warn != nil {
			w.warn("block I/O: " + err.Error())
		}
	}()
}

// close removes the instance, keeping what its buffers lost, or waits
// for finish's removal.
func (w *witness) close() error {
	if w.removed != nil {
		<-w.removed
		return nil
	}
	if w.in == nil {
		return nil
	}
	w.dropped = w.in.Dropped()
	err := w.in.Close()
	w.in = nil
	return err
}

// stats returns the witness's counters.
func (w *witness) stats() event.Stats {
	var s event.Stats
	s.Add(event.CountInfo, StatWitnessed, w.found)
	if w.log.seenDropped != 0 {
		s.Add(event.CountInfo, StatWitnessSeenDropped, w.log.seenDropped)
	}
	s.Add(event.CountInfo, StatWitnessLost, max(w.lostPages, w.dropped))
	s.Add(event.CountInfo, StatWitnessMalformed, w.log.malformed+w.readErrors)
	for i := missNoRecord; i < numMisses; i++ {
		if w.miss[i] != 0 {
			s.Add(event.CountInfo, witnessMissNames[i], w.miss[i])
		}
	}
	return s
}
