package ebpf

import (
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/unwind"
)

// ustackCopied is a record's ustack when the walk was left to user space:
// a stack copy with the event's ID went ahead of it (USTACK_COPIED in
// bpf/unwind.h).
const ustackCopied = -115

// maxStackCopies bounds the copies waiting for their event.
const maxStackCopies = 1024

// stackCopies are the user stack copies waiting for their events, and
// the walker that turns one into frames (set when the backend unwinds:
// unwind_linux.go).
type stackCopies struct {
	byID    map[uint64]*uStackCopyRec
	walk    func(pid uint32, c *uStackCopyRec) userPart
	orphans uint64
}

func (c *stackCopies) add(r *uStackCopyRec) {
	if c.byID == nil {
		c.byID = map[uint64]*uStackCopyRec{}
	}
	if len(c.byID) >= maxStackCopies {
		c.orphans += uint64(len(c.byID))
		clear(c.byID)
	}
	c.byID[r.ID] = r
}

func (c *stackCopies) stats(s *event.Stats) {
	if n := c.orphans + uint64(len(c.byID)); n != 0 {
		s.Add(event.CountUnpaired, "user stack copies whose event never came", n)
	}
}

// eventStack returns the trace's stack ID of an event: its user stack
// (ustack: a key, an error, sent inline or as a copy) and kernel stack.
func (t *tracker) eventStack(id uint64, pid uint32, ustack, kstack int32) uint64 {
	if t.mods != nil && ustack != -1 {
		t.mods.writeInherited(pid)
	}
	switch ustack {
	case errEEXIST:
		if u, ok := t.inlineStacks[id]; ok {
			delete(t.inlineStacks, id)
			return t.stacks.idInline(t.cutOutside(pid, u), kstack, false)
		}
	case ustackCopied:
		if c, ok := t.copies.byID[id]; ok && t.copies.walk != nil {
			delete(t.copies.byID, id)
			return t.stacks.idInline(t.copies.walk(pid, c), kstack, true)
		}
	}
	u, lost := t.stacks.user(ustack)
	return t.stacks.withUser(t.cutOutside(pid, u), lost, kstack)
}

// blockStack returns the trace's stack ID of a block event: the block
// programs walk user stacks as the system calls' are (their keys are in
// the same map), sending nothing ahead of the event.
func (t *tracker) blockStack(pid uint32, ustack, kstack int32) uint64 {
	if ustack == -1 && kstack == -1 {
		return 0
	}
	if t.mods != nil && ustack != -1 {
		t.mods.writeInherited(pid)
	}
	u, lost := t.stacks.user(ustack)
	return t.stacks.withUser(t.cutOutside(pid, u), lost, kstack)
}

// cutOutside ends a frame-pointer walk's frames before the first return
// address no module of the process holds: walking through code without
// frame pointers reads data as return addresses (ASCII text, stack
// addresses), and what follows one is no frame either. A walk by unwind
// tables checked each frame's mapping in the kernel already.
func (t *tracker) cutOutside(pid uint32, u userPart) userPart {
	if u.stop != stopUnknown || t.mods == nil {
		return u
	}
	for i := 1; i < len(u.ips); i++ {
		if t.mods.at(pid, u.ips[i]-1) == nil {
			return userPart{ips: u.ips[:i:i], stop: uint32(unwind.StopBadAddress)}
		}
	}
	return u
}
