package stackjoin

import (
	"slices"

	"github.com/iotrace/iotrace/backend/etw/internal/tally"
	"github.com/iotrace/iotrace/event"
)

// Parts is the stack of one event as it is being joined.
type Parts struct {
	Kernel, User []uint64
	Has          bool
	Lost         event.FactFlags
	// Waiting (live sessions): the kernel part came, the user part will
	// come when thread Tid of process Pid returns to user mode.
	Waiting  bool
	Pid, Tid uint32
}

// UserGone flags a stack whose thread ended (or whose thread ID went to
// another process) before it returned to user mode: its user part will
// never come.
func (sp *Parts) UserGone(t *tally.Tally) {
	sp.Waiting = false
	sp.Lost |= event.FactUserLost
	t.Add(StatUserGone, event.CountDropped, 1)
}

// KernelAddr reports whether a is a kernel-space address of a process
// with ptr-byte pointers.
func KernelAddr(a uint64, ptr int) bool {
	if ptr == 4 {
		return a >= 0x80000000
	}
	return a >= 0xFFFF800000000000
}

// splitFrames sets the kernel frames (innermost, first) and the user
// frames of a whole stack in sp, copied.
func splitFrames(sp *Parts, addrs []uint64, ptr int) {
	i := 0
	for i < len(addrs) && KernelAddr(addrs[i], ptr) {
		i++
	}
	sp.Kernel = slices.Clone(addrs[:i])
	sp.User = slices.Clone(addrs[i:])
	sp.Has = true
}
