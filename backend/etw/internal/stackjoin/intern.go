package stackjoin

import (
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/iotrace/iotrace/event"
)

// Interner gives identical stacks one ID: a stack is written once, as a
// FactStack before the first event that refers to it.
type Interner struct {
	ids  map[uint64][]stackEntry // by hash of the frames and flags
	last uint64
	seed maphash.Seed
	hint int    // the stacks a file's second pass may intern
	hbuf []byte // Intern's hash input
}

type stackEntry struct {
	kernel, user []uint64
	flags        event.FactFlags
	id           uint64
}

// Expect sizes the interner for a file's second pass, which gives
// stacks (of Assemble) to its events.
func (in *Interner) Expect(stacks int) {
	in.hint = min(stacks/16, 1<<12) // most events share stacks (PerfView fixture: 301 for 1,793)
}

// Intern returns the ID of the stack of kernel frames k, user frames u
// and flags, and whether it is new (its fact is then to be written). The
// frames are kept: their backing arrays must not change.
func (in *Interner) Intern(k, u []uint64, flags event.FactFlags) (id uint64, fresh bool) {
	if in.ids == nil {
		in.ids = make(map[uint64][]stackEntry, in.hint)
		in.seed = maphash.MakeSeed()
	}
	// One hash over the frames laid out as bytes (maphash per word
	// costs a call each).
	b := in.hbuf[:0]
	for _, a := range k {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	b = append(b, 0xff)
	for _, a := range u {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(flags))
	in.hbuf = b
	sum := maphash.Bytes(in.seed, b)
	for _, e := range in.ids[sum] {
		if e.flags == flags && slices.Equal(e.kernel, k) && slices.Equal(e.user, u) {
			return e.id, false
		}
	}
	in.last++
	in.ids[sum] = append(in.ids[sum], stackEntry{kernel: k, user: u, flags: flags, id: in.last})
	return in.last, true
}
