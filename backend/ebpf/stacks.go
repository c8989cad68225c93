package ebpf

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
	"github.com/iotrace/iotrace/unwind"
)

// errEEXIST is bpf_get_stackid's answer when the stack's bucket holds
// another stack; maxInlineStacks bounds the inline stacks waiting for
// their event.
const (
	errEEXIST       = -17
	maxInlineStacks = 4096
)

// maxStackDepth is MAX_STACK_DEPTH in bpf/cur_syscall.h: frames per stack
// in the stacks map. A stack that fills it may have lost its outer frames.
const maxStackDepth = 127

// stopUnknown is the stop of a user stack walked by frame pointers (the
// kernel's walk, which does not say why it ended).
const stopUnknown = 255

// userPart is a user stack's frames and why its walk ended.
type userPart struct {
	ips  []uint64
	stop uint32
}

// stackErrors names the errors bpf_get_stackid returns.
var stackErrors = map[int32]string{
	-14:  "no stack to walk (a kernel thread's user stack, or a fault while walking)", // EFAULT
	-17:  "the stacks map's bucket held another stack (hash collision)",               // EEXIST
	-12:  "the stacks map was full",                                                   // ENOMEM
	-28:  "the ring buffer was full (the stack was to be sent ahead of its event)",    // ENOSPC
	-115: "its stack copy was lost",                                                   // EINPROGRESS: USTACK_COPIED, the copy not seen
}

// stackTable turns the kernel's stack IDs (in the stacks map) into the
// trace's: each distinct (kernel, user) pair of frame lists gets an ID and
// one FactStack, written before the first event that refers to it. It also
// writes a FactKernelSymbol for each kernel function a stack's frames fall
// in, the first time one does, so that the trace names kernel frames on
// any machine.
type stackTable struct {
	read func(id int32) ([]uint64, error) // the stacks map's frames of id
	// readUser returns the frames of user stack key: from the stacks map
	// (frame pointers, stop unknown) or from ustacks (unwind tables).
	readUser func(key int32) ([]uint64, uint32, error)
	emit     func(f *event.Fact)
	// loadKsyms reads the kernel's symbols, once, when the first kernel
	// frame needs them: after the tracer's own programs are loaded, so
	// that their frames are known as theirs (and dropped).
	loadKsyms func() *symbolize.Kernel
	ksyms     *symbolize.Kernel // nil: kernel symbols unknown (counted)
	ksymsRead bool

	frames  map[int32][]uint64 // kernel parts by map ID (entries are never removed)
	users   map[int32]userPart // user parts by key
	ids     map[uint64][]stackEntry
	seed    maphash.Seed
	next    uint64
	ksymSet map[uint64]bool // kernel symbols written, by address
	fact    event.Fact

	lost      map[string]uint64 // stack parts not captured, by reason
	inline    uint64            // user stacks whose frames came inline
	walked    uint64            // user stacks walked in user space (copies)
	stops     [unwind.NumStops]uint64
	cutFP     uint64 // frame-pointer walks cut at a frame outside every module
	readErrs  uint64
	noKsym    uint64
	firstRead error
}

type stackEntry struct {
	kernel, user []uint64
	flags        event.FactFlags
	id           uint64
}

// newStackTable returns a table reading kernel parts with read and user
// parts with readUser (nil: from the stacks map, walked by frame
// pointers).
func newStackTable(read func(int32) ([]uint64, error), readUser func(int32) ([]uint64, uint32, error),
	emit func(*event.Fact), loadKsyms func() *symbolize.Kernel) *stackTable {
	if readUser == nil {
		readUser = func(id int32) ([]uint64, uint32, error) {
			f, err := read(id)
			return f, stopUnknown, err
		}
	}
	return &stackTable{read: read, readUser: readUser, emit: emit, loadKsyms: loadKsyms, frames: map[int32][]uint64{},
		users: map[int32]userPart{}, ids: map[uint64][]stackEntry{}, seed: maphash.MakeSeed(), ksymSet: map[uint64]bool{},
		lost: map[string]uint64{}}
}

// part returns the frames of map ID id, or why there are none (a flag).
func (s *stackTable) part(id int32, lostFlag, truncFlag event.FactFlags, what string) ([]uint64, event.FactFlags) {
	if id == -1 {
		return nil, 0
	}
	if id < 0 {
		why, ok := stackErrors[id]
		if !ok {
			why = fmt.Sprintf("error %d", -id)
		}
		s.lost[what+": "+why]++
		return nil, lostFlag
	}
	f, ok := s.frames[id]
	if !ok {
		var err error
		f, err = s.read(id)
		if err != nil {
			s.readErrs++
			if s.firstRead == nil {
				s.firstRead = err
			}
			return nil, lostFlag
		}
		if what == kernelPart {
			f = s.dropTracerFrames(f)
		}
		s.frames[id] = f
	}
	var fl event.FactFlags
	if len(f) >= maxStackDepth {
		fl = truncFlag
	}
	return f, fl
}

// id returns the trace's stack ID for the map IDs user and kernel (-1: not
// asked, other negatives: errors), writing its facts when new; 0 when
// neither part was asked for.
func (s *stackTable) id(user, kernel int32) uint64 {
	if user == -1 && kernel == -1 {
		return 0
	}
	u, lost := s.user(user)
	return s.withUser(u, lost, kernel)
}

// user returns the user part of key (-1: not asked, other negatives:
// errors, with FactUserLost).
func (s *stackTable) user(key int32) (userPart, event.FactFlags) {
	return s.userFrom(key, s.users, s.readUser)
}

func (s *stackTable) userFrom(key int32, cache map[int32]userPart, read func(int32) ([]uint64, uint32, error)) (userPart, event.FactFlags) {
	if key == -1 {
		return userPart{stop: stopUnknown}, 0
	}
	if key < 0 {
		why, ok := stackErrors[key]
		if !ok {
			why = fmt.Sprintf("error %d", -key)
		}
		s.lost["user stacks not captured: "+why]++
		return userPart{stop: stopUnknown}, event.FactUserLost
	}
	if u, ok := cache[key]; ok {
		return u, 0
	}
	ips, stop, err := read(key)
	if err != nil {
		s.readErrs++
		if s.firstRead == nil {
			s.firstRead = err
		}
		return userPart{stop: stopUnknown}, event.FactUserLost
	}
	u := userPart{ips: ips, stop: stop}
	cache[key] = u
	return u, 0
}

// idInline is id for a user stack whose frames came inline (its key in
// the map held another stack) or were walked in user space (walked).
func (s *stackTable) idInline(u userPart, kernel int32, walked bool) uint64 {
	if walked {
		s.walked++
	} else {
		s.inline++
	}
	return s.withUser(u, 0, kernel)
}

// withUser interns user part u (lost: FactUserLost when it was not
// captured) with kernel part kernel, flagging a walk that ended before
// the outermost frame and counting why.
func (s *stackTable) withUser(u userPart, lost event.FactFlags, kernel int32) uint64 {
	uf := lost
	switch {
	case lost != 0:
	case u.stop == stopUnknown:
		// A frame-pointer walk: a full one may have lost outer frames.
		if len(u.ips) >= maxStackDepth {
			uf |= event.FactUserTruncated
		}
	case u.stop < uint32(unwind.NumStops):
		s.stops[u.stop]++
		if unwind.Stop(u.stop) != unwind.StopComplete {
			uf |= event.FactUserTruncated
		}
	default:
		uf |= event.FactUserTruncated
	}
	return s.intern(u.ips, uf, kernel)
}

func (s *stackTable) intern(u []uint64, uf event.FactFlags, kernel int32) uint64 {
	k, kf := s.part(kernel, event.FactKernelLost, event.FactKernelTruncated, kernelPart)
	flags := kf | uf
	h := s.hash(k, u, flags)
	for _, e := range s.ids[h] {
		if e.flags == flags && slices.Equal(e.kernel, k) && slices.Equal(e.user, u) {
			return e.id
		}
	}
	s.next++
	s.ids[h] = append(s.ids[h], stackEntry{kernel: k, user: u, flags: flags, id: s.next})
	for _, a := range k {
		s.kernelSymbol(a)
	}
	f := &s.fact
	*f = event.Fact{Kind: event.FactStack, Handle: s.next, Kernel: k, User: u, Flags: flags}
	s.emit(f)
	return s.next
}

const kernelPart = "kernel stacks not captured"

// copiesWalked counts the user stacks walked in user space.
const copiesWalked = "user stacks walked in user space from a copy (a module's unwind table was not loaded yet)"

// kernel returns the kernel's symbols, reading them the first time.
func (s *stackTable) kernel() *symbolize.Kernel {
	if !s.ksymsRead {
		s.ksymsRead = true
		if s.loadKsyms != nil {
			s.ksyms = s.loadKsyms()
		}
	}
	return s.ksyms
}

// dropTracerFrames removes the innermost frames that are the tracer's own:
// the BPF program that took the stack and the kernel's function that ran
// it (bpf_trace_run*), which are not part of the I/O's path.
func (s *stackTable) dropTracerFrames(f []uint64) []uint64 {
	k := s.kernel()
	if k == nil {
		return f
	}
	for len(f) > 0 {
		fn := k.Symbolize(f[0]).Function
		if !strings.HasPrefix(fn, "bpf_prog_") && !strings.HasPrefix(fn, "bpf_trace_run") && !strings.HasPrefix(fn, "__bpf_trace_") {
			break
		}
		f = f[1:]
	}
	return f
}

// kernelSymbol writes the kernel symbol holding addr, once.
func (s *stackTable) kernelSymbol(addr uint64) {
	if s.kernel() == nil {
		s.noKsym++
		return
	}
	fr := s.ksyms.Symbolize(addr)
	if fr.Function == "" {
		s.noKsym++
		return
	}
	start := addr - fr.Offset
	if s.ksymSet[start] {
		return
	}
	s.ksymSet[start] = true
	mod := fr.Module
	if mod == "kernel" {
		mod = ""
	}
	f := &s.fact
	*f = event.Fact{Kind: event.FactKernelSymbol, Handle: start, Name: fr.Function, Detail: mod}
	s.emit(f)
}

func (s *stackTable) hash(k, u []uint64, flags event.FactFlags) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	var b [8]byte
	for _, part := range [][]uint64{k, u} {
		binary.LittleEndian.PutUint64(b[:], uint64(len(part)))
		h.Write(b[:])
		for _, a := range part {
			binary.LittleEndian.PutUint64(b[:], a)
			h.Write(b[:])
		}
	}
	binary.LittleEndian.PutUint64(b[:], uint64(flags))
	h.Write(b[:])
	return h.Sum64()
}

// stats adds the table's counters to st.
func (s *stackTable) stats(st *event.Stats) {
	st.Add(event.CountInfo, "stacks (distinct)", s.next)
	if s.inline != 0 {
		st.Add(event.CountInfo, "user stacks sent inline (their stacks-map bucket held another stack)", s.inline)
	}
	if s.walked != 0 {
		st.Add(event.CountInfo, copiesWalked, s.walked)
	}
	for i, n := range s.stops {
		switch {
		case n == 0:
		case unwind.Stop(i) == unwind.StopComplete:
			st.Add(event.CountInfo, "user stacks walked to their outermost frame", n)
		default:
			st.Add(event.CountUnresolved, "user stacks ended early (user-truncated): "+unwind.Stop(i).String(), n)
		}
	}
	if s.cutFP != 0 {
		st.Add(event.CountUnresolved, "user stacks cut at a frame outside every module (user-truncated): the frame-pointer walk read data as a return address", s.cutFP)
	}
	// A stack part not captured leaves its event without it: the event
	// is there, what it lacks is counted with the other unresolved things.
	for why, n := range s.lost {
		st.Add(event.CountUnresolved, why, n)
	}
	if s.readErrs != 0 {
		st.Add(event.CountUnresolved, fmt.Sprintf("stacks not read from the stacks map (first: %v)", s.firstRead), s.readErrs)
	}
	if s.noKsym != 0 {
		st.Add(event.CountUnresolved, "kernel frames outside every kernel symbol known at record time (/proc/kallsyms)", s.noKsym)
	}
}

// trimFrames cuts a stacks-map value at its first empty slot.
func trimFrames(v []uint64) []uint64 {
	for i, a := range v {
		if a == 0 {
			return v[:i:i]
		}
	}
	return v
}
