package ebpf

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/iotrace/iotrace/backend/ebpf/slots"
)

// TestIntakeWait: the reader polls every pollBusy, and says so to the
// writers, while at least busyRecords are read from the slots per
// pollBusy (judged once per pollBusy); otherwise it sleeps for the idle
// interval and the writers wake it.
func TestIntakeWait(t *testing.T) {
	l := slots.Layout{CPUs: 2, Shift: 10, Stride: 16, Record: 8}
	words := make([]uint64, (l.Size()+l.TailsSize())/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	sl, err := slots.New(mem[:l.Size()], mem[l.Size():], l)
	if err != nil {
		t.Fatal(err)
	}
	tails := mem[l.Size():]
	polling := func() (on [2]bool) {
		for cpu := range on {
			on[cpu] = binary.LittleEndian.Uint64(tails[cpu*slots.TailStride+8:]) != 0
		}
		return on
	}
	in := newIntake(sl, func([]byte) error { return nil })
	const idle = 10 * time.Millisecond
	read := func(n int) {
		for range n {
			sl.Pop(1)
		}
	}
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		name  string
		after time.Duration // since the last wait
		read  int
		want  time.Duration
		poll  bool
	}{
		{"quiet", 0, 0, idle, false},
		{"fewer than busyRecords", idle, busyRecords - 1, idle, false},
		{"filling", idle, busyRecords, pollBusy, true},
		{"still filling", pollBusy, 5 * busyRecords, pollBusy, true},
		{"woken between two polls: still polling", pollBusy / 4, 0, pollBusy, true},
		{"quiet for a whole poll", pollBusy, 3, idle, false},
	} {
		read(c.read)
		now = now.Add(c.after)
		got := in.wait(now, idle)
		if got != c.want || polling() != [2]bool{c.poll, c.poll} || in.polling != c.poll {
			t.Errorf("%s: wait %v, writers told %v; want %v, polling %v", c.name, got, polling(), c.want, c.poll)
		}
	}
}
