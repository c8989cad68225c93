package ebpf

import (
	"os"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf/blockio"
	"github.com/iotrace/iotrace/event"
)

// blockLoad loads the block programs (blockio.Load) in the background,
// side by side with the system-call programs: the verifier runs per
// program, and the block side's own maps are made meanwhile. It starts
// once the system-call side's maps exist, since it shares them.
type blockLoad struct {
	done chan struct{}
	bt   *blockio.Tracer // nil once taken
	err  error
	took time.Duration
}

// startBlockLoad begins loading with bo.
func startBlockLoad(bo blockio.Options) *blockLoad {
	b := &blockLoad{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t0 := time.Now()
		b.bt, b.err = blockio.Load(bo)
		b.took = time.Since(t0)
	}()
	return b
}

// wait returns the loaded tracer, now the caller's to close, or why it
// could not be loaded.
func (b *blockLoad) wait() (*blockio.Tracer, error) {
	<-b.done
	bt := b.bt
	b.bt = nil
	return bt, b.err
}

// close waits for the load and closes the tracer if nobody took it.
func (b *blockLoad) close() {
	if b == nil {
		return
	}
	if bt, _ := b.wait(); bt != nil {
		_ = bt.Close()
	}
}

// blockOptions are the block tracer's options: linked to the traced
// system calls through the threads' states (cur_syscall, thread_slots;
// and sharing their ring buffer for
// page-cache records) when they are traced too, to their stack and
// unwind maps with --stacks, to their pid filter when the trace is
// filtered. Origin is set at attach.
func blockOptions(pr *probes, opts *backend.Options, sink *lockedSink, wakeupBytes uint64, wantFile, unwind, filtered bool) blockio.Options {
	bo := blockio.Options{
		ExcludePid:  uint32(os.Getpid()),
		BufferSize:  opts.BufferSize,
		Warn:        opts.Warn,
		KernelTypes: pr.kernelTypes,
		Fact: func(f *event.Fact) {
			_ = sink.Fact(f)
		},
	}
	o := &pr.objs
	if wantFile {
		bo.CurSyscall, bo.ThreadSlots = o.CurSyscall, o.ThreadSlots
		bo.InodeIO = o.InodeIo
		bo.PageCache, bo.PageCacheWakeup = o.Rb, wakeupBytes
	}
	if opts.Stacks != 0 {
		bo.Stacks, bo.StackMap = opts.Stacks, o.Stacks
	}
	if unwind {
		bo.Unwind = &blockio.UnwindMaps{Files: o.UnwindFiles, Rows: o.UnwindRows, Rules: o.UnwindRules, UStacks: o.Ustacks, PageShift: pageShift()}
	}
	if filtered {
		bo.PidFilter = o.Pids
	}
	return bo
}
