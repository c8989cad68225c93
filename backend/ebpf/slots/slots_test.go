package slots

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// writer is the BPF side of the protocol (slot_reserve and slot_publish
// in bpf/iotrace.bpf.c), in Go, for the tests.
type writer struct {
	mem, tails []byte
	l          Layout
	head       []atomic.Uint64
	tailCache  []atomic.Uint64
}

func newWriter(mem, tails []byte, l Layout) *writer {
	return &writer{mem: mem, tails: tails, l: l, head: make([]atomic.Uint64, l.CPUs), tailCache: make([]atomic.Uint64, l.CPUs)}
}

func newMem(size int) []byte {
	words := make([]uint64, (size+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
}

func newPair(t testing.TB, l Layout) (*writer, *Reader) {
	mem, tails := newMem(l.Size()), newMem(l.TailsSize())
	r, err := New(mem, tails, l)
	if err != nil {
		t.Fatal(err)
	}
	return newWriter(mem, tails, l), r
}

// write stores rec in cpu's next slot; false: the ring is full (lost).
func (w *writer) write(cpu int, rec uint64) bool {
	n := uint64(1) << w.l.Shift
	head := &w.head[cpu]
	for {
		p := head.Load()
		if p-w.tailCache[cpu].Load() >= n {
			w.tailCache[cpu].Store(atomic.LoadUint64((*uint64)(unsafe.Pointer(&w.tails[cpu*TailStride]))))
			if p-w.tailCache[cpu].Load() >= n {
				return false
			}
		}
		if !head.CompareAndSwap(p, p+1) {
			continue
		}
		off := ((cpu << w.l.Shift) + int(p&(n-1))) * w.l.Stride
		binary.LittleEndian.PutUint64(w.mem[off+StateSize:], rec)
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&w.mem[off])), p+1)
		return true
	}
}

func TestDrainInOrderEveryLap(t *testing.T) {
	l := Layout{CPUs: 2, Shift: 3, Stride: 24, Record: 16}
	w, r := newPair(t, l)
	var next [2]uint64
	for round := range 10 { // ten laps and more of each ring
		for cpu := range 2 {
			for i := range 5 {
				if !w.write(cpu, uint64(cpu)<<32|uint64(round*5+i)) {
					t.Fatalf("cpu %d round %d: ring full with %d of 8 used", cpu, round, i)
				}
			}
		}
		for cpu := range 2 {
			got := r.Drain(cpu, func(rec []byte) {
				v := binary.LittleEndian.Uint64(rec)
				if want := uint64(cpu)<<32 | next[cpu]; v != want {
					t.Fatalf("cpu %d: record %#x, want %#x", cpu, v, want)
				}
				next[cpu]++
			})
			if got != 5 {
				t.Fatalf("cpu %d round %d: drained %d, want 5", cpu, round, got)
			}
		}
	}
	if n := r.Read(); n != 100 {
		t.Fatalf("Read = %d, want 100", n)
	}
}

func TestFullRingLosesTheNewRecordNotAnOldOne(t *testing.T) {
	l := Layout{CPUs: 1, Shift: 2, Stride: 16, Record: 8}
	w, r := newPair(t, l)
	for i := range 4 {
		if !w.write(0, uint64(i)) {
			t.Fatalf("record %d refused in an empty ring", i)
		}
	}
	if w.write(0, 99) {
		t.Fatal("a fifth record was taken by a ring of four unread slots")
	}
	var got []uint64
	r.Drain(0, func(rec []byte) { got = append(got, binary.LittleEndian.Uint64(rec)) })
	if len(got) != 4 || got[0] != 0 || got[3] != 3 {
		t.Fatalf("drained %v, want [0 1 2 3]", got)
	}
	if !w.write(0, 4) {
		t.Fatal("a freed slot was not reused")
	}
}

// Two writers on one CPU's ring (a kernel running the programs
// preemptibly) and a reader at once: every record read once, each
// writer's in its order, the lost ones refused, never overwritten.
func TestConcurrentWritersAndReader(t *testing.T) {
	l := Layout{CPUs: 1, Shift: 6, Stride: 16, Record: 8}
	w, r := newPair(t, l)
	const per = 200000
	var lost [2]atomic.Uint64
	var wg sync.WaitGroup
	for id := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if !w.write(0, uint64(id)<<32|uint64(i)) {
					lost[id].Add(1)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var last [2]int64
	last[0], last[1] = -1, -1
	var read [2]uint64
	check := func(rec []byte) {
		v := binary.LittleEndian.Uint64(rec)
		id, i := v>>32, int64(uint32(v))
		if id > 1 || i <= last[id] {
			t.Fatalf("record %#x after %d of writer %d", v, last[id&1], id)
		}
		last[id] = i
		read[id]++
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		r.Drain(0, check)
	}
	r.Drain(0, check)
	for id := range 2 {
		if read[id]+lost[id].Load() != per {
			t.Errorf("writer %d: %d read + %d lost != %d written", id, read[id], lost[id].Load(), per)
		}
	}
}

func TestNewRefusesBadLayouts(t *testing.T) {
	mem := newMem(4096)
	for _, l := range []Layout{
		{CPUs: 0, Shift: 4, Stride: 16, Record: 8},
		{CPUs: 1, Shift: 1, Stride: 16, Record: 8},
		{CPUs: 1, Shift: 4, Stride: 12, Record: 8},
		{CPUs: 1, Shift: 4, Stride: 8, Record: 8},
		{CPUs: 64, Shift: 10, Stride: 16, Record: 8}, // larger than mem
	} {
		if _, err := New(mem, mem, l); err == nil {
			t.Errorf("layout %+v accepted", l)
		}
	}
}

// TestSetPolling: the reader's polling word is the second of each CPU's
// tail line (struct slot_tail), apart from its tail.
func TestSetPolling(t *testing.T) {
	l := Layout{CPUs: 3, Shift: 4, Stride: 16, Record: 8}
	mem, tails := newMem(l.Size()), newMem(l.TailsSize())
	r, err := New(mem, tails, l)
	if err != nil {
		t.Fatal(err)
	}
	word := func(cpu, i int) uint64 {
		return binary.LittleEndian.Uint64(tails[cpu*TailStride+8*i:])
	}
	r.Pop(1)
	r.Flush()
	r.SetPolling(true)
	for cpu := range l.CPUs {
		if word(cpu, 1) != 1 {
			t.Errorf("CPU %d: polling word %d, want 1", cpu, word(cpu, 1))
		}
	}
	if word(1, 0) != 1 || word(0, 0) != 0 {
		t.Errorf("tails %d and %d, want 0 and 1 (untouched by SetPolling)", word(0, 0), word(1, 0))
	}
	r.SetPolling(false)
	for cpu := range l.CPUs {
		if word(cpu, 1) != 0 {
			t.Errorf("CPU %d: polling word %d after SetPolling(false)", cpu, word(cpu, 1))
		}
	}
}
