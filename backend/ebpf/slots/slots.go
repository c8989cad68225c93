// Package slots reads the per-CPU record slots the eBPF programs write
// (bpf/iotrace.bpf.c, "Per-CPU record slots"): for each CPU a ring of
// fixed-size slots in one memory-mapped BPF array, each slot a state word
// and a record, and the reader's position per CPU in another. The
// system-call path writes its records there rather than to the BPF ring
// buffer, whose reserve and commit cost more than the rest of the path
// (docs/benchmarks.md, issue 28).
//
// The protocol, per CPU: position p is slot p mod n. The writer reserves
// p by compare-and-swap on its CPU's head, only while p - n is below the
// reader's tail (else the program sends the record through the ring
// buffer instead, counted: no slot is overwritten),
// writes the record and publishes it by setting the slot's state to p+1.
// The reader hands over the record at its tail while the state says it
// is published, then moves its tail on; it writes its tail where the
// writer looks (the tails array) every 256 records and at Flush. The
// writer wakes the reader every quarter ring unless the reader says, next
// to its tail, that it polls (SetPolling). The reader never writes a slot
// (the loader maps them read-only): their cache lines only travel from
// the writer's CPU.
//
// Written here, not taken from a library: the layout is this project's own
// and the reader is a few lines over memory the loader maps.
package slots

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// StateSize is the bytes of a slot's state word, ahead of its record.
const StateSize = 8

// TailStride is the bytes from one CPU's tail to the next (a cache line
// each: struct slot_tail).
const TailStride = 64

// pollingOffset is where, in a CPU's tail line, the reader says it polls
// (struct slot_tail's polling).
const pollingOffset = 8

// Layout is how the slots lie in the mapped array.
type Layout struct {
	CPUs   int  // rings, one per possible CPU
	Shift  uint // log2 of the slots per CPU
	Stride int  // bytes from one slot to the next (the array's value size, rounded up to 8)
	Record int  // bytes of a record (after the state word)
}

// Size is the bytes of memory the slots span.
func (l Layout) Size() int { return l.CPUs << l.Shift * l.Stride }

// TailsSize is the bytes of memory the tails span.
func (l Layout) TailsSize() int { return l.CPUs * TailStride }

func (l Layout) check() error {
	switch {
	case l.CPUs <= 0:
		return fmt.Errorf("slots: %d CPUs", l.CPUs)
	case l.Shift < 2 || l.Shift > 24:
		return fmt.Errorf("slots: 2^%d slots per CPU (want 2^2 to 2^24)", l.Shift)
	case l.Record <= 0 || l.Stride < StateSize+l.Record || l.Stride%8 != 0:
		return fmt.Errorf("slots: stride %d for a %d-byte record", l.Stride, l.Record)
	}
	return nil
}

// Reader reads the slots of every CPU. It is not safe for concurrent use:
// one goroutine reads.
type Reader struct {
	mem, tailMem []byte
	l            Layout
	tails        []uint64 // each CPU's next position to read
}

// New returns a reader of mem, which holds the slots as l lays them out,
// and of tails, where it writes its position in each CPU's (both mapped
// from BPF arrays; 8-byte aligned).
func New(mem, tails []byte, l Layout) (*Reader, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	if len(mem) < l.Size() || len(tails) < l.TailsSize() {
		return nil, fmt.Errorf("slots: %d and %d bytes mapped, the layout needs %d and %d", len(mem), len(tails), l.Size(), l.TailsSize())
	}
	for _, m := range [][]byte{mem, tails} {
		if uintptr(unsafe.Pointer(unsafe.SliceData(m)))%8 != 0 {
			return nil, fmt.Errorf("slots: memory not 8-byte aligned")
		}
	}
	return &Reader{mem: mem, tailMem: tails, l: l, tails: make([]uint64, l.CPUs)}, nil
}

// Layout returns the reader's layout.
func (r *Reader) Layout() Layout { return r.l }

// Read returns the records read (popped) so far, on every CPU.
func (r *Reader) Read() uint64 {
	var n uint64
	for _, t := range r.tails {
		n += t
	}
	return n
}

// Peek returns the record at cpu's tail when it is published (false:
// none yet). It stays valid, and its slot the reader's, until Pop.
func (r *Reader) Peek(cpu int) ([]byte, bool) {
	t := r.tails[cpu]
	off := ((cpu << r.l.Shift) + int(t&(1<<r.l.Shift-1))) * r.l.Stride
	if atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.mem[off]))) != t+1 {
		return nil, false
	}
	return r.mem[off+StateSize : off+StateSize+r.l.Record], true
}

// Pop moves cpu's tail past the record Peek returned; every 256 records
// the writer is told.
func (r *Reader) Pop(cpu int) {
	r.tails[cpu]++
	if r.tails[cpu]&255 == 0 {
		r.publish(cpu)
	}
}

// Flush tells the writer of every CPU's tail.
func (r *Reader) Flush() {
	for cpu := range r.tails {
		r.publish(cpu)
	}
}

// SetPolling tells the writers of every CPU whether the reader polls the
// slots on a timer (then they do not wake it).
func (r *Reader) SetPolling(on bool) {
	v := uint64(0)
	if on {
		v = 1
	}
	for cpu := range r.tails {
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&r.tailMem[cpu*TailStride+pollingOffset])), v)
	}
}

func (r *Reader) publish(cpu int) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&r.tailMem[cpu*TailStride])), r.tails[cpu])
}

// Drain passes each record published on cpu to fn, in the order written,
// then tells the writer the slots are free (fn copies what it keeps). It
// stops after one lap, so that a writer refilling the ring as fast as it
// is read cannot hold the reader. It returns the records read.
func (r *Reader) Drain(cpu int, fn func(rec []byte)) int {
	read := 0
	for ; read < 1<<r.l.Shift; read++ {
		b, ok := r.Peek(cpu)
		if !ok {
			break
		}
		fn(b)
		r.Pop(cpu)
	}
	r.publish(cpu)
	return read
}

// CPU is one CPU's slots as a source of records (package reorder).
type CPU struct {
	r   *Reader
	cpu int
}

// CPU returns cpu's slots as a source of records.
func (r *Reader) CPU(cpu int) CPU { return CPU{r, cpu} }

// Peek returns cpu's next published record (Reader.Peek).
func (c CPU) Peek() ([]byte, bool) { return c.r.Peek(c.cpu) }

// Pop moves past it (Reader.Pop).
func (c CPU) Pop() { c.r.Pop(c.cpu) }
