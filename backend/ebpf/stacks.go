package ebpf

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
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

// stackErrors names the errors bpf_get_stackid returns.
var stackErrors = map[int32]string{
	-14: "no stack to walk (a kernel thread's user stack, or a fault while walking)", // EFAULT
	-17: "the stacks map's bucket held another stack (hash collision)",               // EEXIST
	-12: "the stacks map was full",                                                   // ENOMEM
}

// stackTable turns the kernel's stack IDs (in the stacks map) into the
// trace's: each distinct (kernel, user) pair of frame lists gets an ID and
// one FactStack, written before the first event that refers to it. It also
// writes a FactKernelSymbol for each kernel function a stack's frames fall
// in, the first time one does, so that the trace names kernel frames on
// any machine.
type stackTable struct {
	read func(id int32) ([]uint64, error) // the stacks map's frames of id
	emit func(f *event.Fact)
	// loadKsyms reads the kernel's symbols, once, when the first kernel
	// frame needs them: after the tracer's own programs are loaded, so
	// that their frames are known as theirs (and dropped).
	loadKsyms func() *symbolize.Kernel
	ksyms     *symbolize.Kernel // nil: kernel symbols unknown (counted)
	ksymsRead bool

	frames  map[int32][]uint64 // by map ID (entries are never removed)
	ids     map[uint64][]stackEntry
	seed    maphash.Seed
	next    uint64
	ksymSet map[uint64]bool // kernel symbols written, by address
	fact    event.Fact

	lost      map[string]uint64 // stack parts not captured, by reason
	inline    uint64            // user stacks whose frames came inline
	readErrs  uint64
	noKsym    uint64
	firstRead error
}

type stackEntry struct {
	kernel, user []uint64
	flags        event.FactFlags
	id           uint64
}

func newStackTable(read func(int32) ([]uint64, error), emit func(*event.Fact), loadKsyms func() *symbolize.Kernel) *stackTable {
	return &stackTable{read: read, emit: emit, loadKsyms: loadKsyms, frames: map[int32][]uint64{},
		ids: map[uint64][]stackEntry{}, seed: maphash.MakeSeed(), ksymSet: map[uint64]bool{}, lost: map[string]uint64{}}
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
	u, uf := s.part(user, event.FactUserLost, event.FactUserTruncated, "user stacks not captured")
	return s.intern(u, uf, kernel)
}

// idInline is id for a user stack whose frames came inline (its bucket in
// the stacks map held another stack).
func (s *stackTable) idInline(user []uint64, kernel int32) uint64 {
	var uf event.FactFlags
	if len(user) >= maxStackDepth {
		uf = event.FactUserTruncated
	}
	s.inline++
	return s.intern(user, uf, kernel)
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
