package live

import (
	"fmt"
	"math/bits"
)

// Sizing a session's buffers.
//
// ETW gives a kernel session BufferSize-KB buffers, at least two per
// processor (MinimumBuffers, allocated at the start) and at most
// MaximumBuffers (allocated as events come faster than they are
// delivered; beyond them events are lost, counted in EventsLost). The
// memory is the kernel's non-paged pool, so its sum is bounded here:
// with 64 processors, 64 + 4 per processor buffers of 1 MB would be
// 320 MB.

// ETW's limits on BufferSize (EVENT_TRACE_PROPERTIES; before Windows 8
// the largest was 1 MB).
const (
	MinBufferKB = 4
	MaxBufferKB = 16 << 10
)

// Defaults of the plan.
const (
	// defaultBufferKB is the buffer size on machines where the minimum
	// of two buffers per processor fits in maxSessionMemory.
	defaultBufferKB = 1 << 10
	// smallestDefaultKB is the least buffer size a default plan picks
	// on a machine with many processors.
	smallestDefaultKB = 64
	// maxSessionMemory bounds the memory of one session's buffers.
	maxSessionMemory = 256 << 20
)

// bufferPlan is the size and count of a session's buffers.
type bufferPlan struct {
	SizeKB, Min, Max uint32
}

// bytes returns the most memory the plan's buffers take.
func (p bufferPlan) bytes() uint64 { return uint64(p.Max) * uint64(p.SizeKB) << 10 }

// planBuffers returns the buffers of a session on cpus processors:
// sizeKB, min and max as asked (0: the default), bounded by ETW's limits
// and by maxSessionMemory. A size ETW does not take, or a minimum that
// does not fit in maxSessionMemory, is an error that says what to ask
// instead.
func planBuffers(sizeKB, min, max, cpus uint32) (bufferPlan, error) {
	cpus = maxU32(cpus, 1)
	if sizeKB != 0 && (sizeKB < MinBufferKB || sizeKB > MaxBufferKB) {
		return bufferPlan{}, fmt.Errorf("--buffer-size %d KB: ETW buffers are %d KB to %d KB (16 MB)", sizeKB, MinBufferKB, MaxBufferKB)
	}
	p := bufferPlan{SizeKB: sizeKB, Min: maxU32(min, 2*cpus), Max: max}
	if p.SizeKB == 0 {
		// The default size, halved until two buffers per processor
		// fit in the bound.
		p.SizeKB = defaultBufferKB
		for p.SizeKB > smallestDefaultKB && uint64(p.Min)*uint64(p.SizeKB)<<10 > maxSessionMemory {
			p.SizeKB /= 2
		}
	}
	if need := uint64(p.Min) * uint64(p.SizeKB) << 10; need > maxSessionMemory {
		fit := uint32(maxSessionMemory >> 10 / uint64(p.Min))
		return bufferPlan{}, fmt.Errorf("--buffer-size %d KB on %d processors: ETW allocates at least %d buffers (two per processor) = %d MB of kernel memory, more than the %d MB iotrace allows a session; ask %d KB or less",
			p.SizeKB, cpus, p.Min, need>>20, maxSessionMemory>>20, floorPow2(fit))
	}
	if p.Max == 0 {
		p.Max = 64 + 4*cpus
	}
	limit := uint32(maxSessionMemory >> 10 / uint64(p.SizeKB))
	p.Max = maxU32(p.Min, minU32(p.Max, limit))
	return p, nil
}

func maxU32(a, b uint32) uint32 {
	if a > b {
		return a
	}
	return b
}

func minU32(a, b uint32) uint32 {
	if a < b {
		return a
	}
	return b
}

// floorPow2 returns the largest power of 2 not above n (0 for 0).
func floorPow2(n uint32) uint32 {
	if n == 0 {
		return 0
	}
	return 1 << (bits.Len32(n) - 1)
}
