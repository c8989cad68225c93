package stackjoin

import (
	"cmp"
	"context"
	"slices"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// keyDef is the frames a stack cache key stood for, until ts. The
// kernel's and the user part's keys are apart (the same key can stand
// for a kernel and a user part at once): a definition belongs to the
// space of its outermost frame.
type keyDef struct {
	key    uint64
	ts     int64
	frames part
	seq    uint32 // arrival order, for equal times
	kernel bool
	create bool
}

// maxLiveDefs bounds the key definitions a live session keeps.
const maxLiveDefs = 1 << 16

// DefineKey records the frames of a stack cache key, from a key
// definition record r (KeyCreate, KeyDelete, KeyRundown) of a file's
// first pass. A definition the same as the key's last one (same time,
// kind and frames: a record repeated) is kept once: it could not change
// what a reference resolves to.
func (s *Joiner) DefineKey(r *record.Record, key uint64, frames kernel.Frames) {
	n := frames.Len()
	if n == 0 {
		return
	}
	k := defKey{key: key, kernel: KernelAddr(frames.At(n-1), frames.PtrSize())}
	create := r.Opcode == kernel.OpcodeStackKeyCreate
	if j, ok := s.lastDef[k]; ok {
		if d := &s.defs[j]; d.ts == r.Timestamp && d.create == create && sameFrames(s.frames(d.frames), frames) {
			return
		}
	}
	if s.lastDef == nil {
		s.lastDef = make(map[defKey]uint32)
	}
	s.lastDef[k] = uint32(len(s.defs))
	s.addDef(r, k, frames)
}

// defKey is a key of one space.
type defKey struct {
	key    uint64
	kernel bool
}

// sameFrames reports whether f holds the frames fr holds.
func sameFrames(f []uint64, fr kernel.Frames) bool {
	if len(f) != fr.Len() {
		return false
	}
	for i, a := range f {
		if fr.At(i) != a {
			return false
		}
	}
	return true
}

// addDef keeps a definition of k.
func (s *Joiner) addDef(r *record.Record, k defKey, frames kernel.Frames) {
	fr := s.keepFrames(frames)
	s.defs = append(s.defs, keyDef{key: k.key, ts: r.Timestamp, frames: fr, seq: uint32(len(s.defs)),
		kernel: k.kernel, create: r.Opcode == kernel.OpcodeStackKeyCreate})
	s.defsSorted = false
}

// DefineLiveKey is DefineKey in a live session, which keeps the latest
// maxLiveDefs/2 definitions once it has maxLiveDefs.
func (s *Joiner) DefineLiveKey(r *record.Record, key uint64, frames kernel.Frames) {
	n := frames.Len()
	if n == 0 {
		return
	}
	if len(s.defs) >= maxLiveDefs {
		s.defs = append(s.defs[:0], s.defs[len(s.defs)/2:]...)
	}
	s.addDef(r, defKey{key: key, kernel: KernelAddr(frames.At(n-1), frames.PtrSize())}, frames)
}

// sortDefs orders the key definitions by key, space and time (then
// arrival), in place: a live session's, sorted again as they come.
func (s *Joiner) sortDefs() {
	if s.defsSorted {
		return
	}
	slices.SortFunc(s.defs, func(a, b keyDef) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if a.kernel != b.kernel {
			if a.kernel {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(a.ts, b.ts); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	s.defsSorted = true
}

// sortDefsOnce orders the key definitions as sortDefs does, once they are
// all in (a file's first pass): it sorts small keys, then moves each
// definition once.
func (s *Joiner) sortDefsOnce(ctx context.Context) error {
	s.lastDef = nil
	if s.defsSorted {
		return nil
	}
	defs := s.defs
	order := make([]defOrder, len(defs))
	for i := range defs {
		d := &defs[i]
		o := defOrder{key: d.key, ts: d.ts, ks: uint64(d.seq&(1<<31-1))<<32 | uint64(uint32(i))}
		if d.kernel {
			o.ks |= 1 << 63
		}
		order[i] = o
	}
	if err := sortDefOrder(ctx, order); err != nil {
		return err
	}
	sorted := make([]keyDef, len(defs))
	for j, o := range order {
		sorted[j] = defs[uint32(o.ks)]
	}
	s.defs = sorted
	s.defsSorted = true
	return nil
}

// KeyFrames returns the frames key (of the kernel or the user space)
// stood for at ts: the first deletion or rundown of the key at or after
// ts, else the last creation before it. A key never defined is counted.
func (s *Joiner) KeyFrames(key uint64, kernelSide bool, ts int64) ([]uint64, bool) {
	s.sortDefs()
	i, _ := slices.BinarySearchFunc(s.defs, key, func(d keyDef, k uint64) int { return cmp.Compare(d.key, k) })
	var created *keyDef
	for ; i < len(s.defs) && s.defs[i].key == key; i++ {
		d := &s.defs[i]
		if d.kernel != kernelSide {
			continue
		}
		if d.create {
			if d.ts <= ts {
				created = d
			}
			continue
		}
		if d.ts >= ts {
			return s.frames(d.frames), true
		}
	}
	if created != nil {
		return s.frames(created.frames), true
	}
	s.t.Add(StatKeyUndefined, event.CountDropped, 1)
	return nil, false
}

// LivePart adds the frames of a live session's stack record r (decoded:
// ev) to sp: a whole stack, or the part a cache key reference stands
// for.
func (s *Joiner) LivePart(sp *Parts, r *record.Record, ev *kernel.Event) {
	ptr := ev.Frames.PtrSize()
	switch {
	case ev.Kind == kernel.KindStack:
		s.scratch = ev.Frames.AppendTo(s.scratch[:0])
		splitFrames(sp, s.scratch, ptr)
	case r.Opcode == kernel.OpcodeStackKeyKernel:
		if f, ok := s.KeyFrames(ev.StackKey, true, r.Timestamp); ok {
			sp.Kernel = f
		} else {
			sp.Lost |= event.FactKernelLost
		}
		sp.Has = true
	default:
		if f, ok := s.KeyFrames(ev.StackKey, false, r.Timestamp); ok {
			sp.User = f
		} else {
			sp.Lost |= event.FactUserLost
		}
		sp.Has = true
	}
}
