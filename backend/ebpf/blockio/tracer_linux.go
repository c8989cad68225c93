package blockio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf/internal/bpfload"
	"github.com/iotrace/iotrace/backend/ebpf/internal/phase"
	"github.com/iotrace/iotrace/event"
)

// Tracer traces block I/O: one event per bio, from queue to completion.
// Create it with [Open], read it with [Tracer.Run], release it with
// [Tracer.Close].
type Tracer struct {
	opts     Options
	filtered bool

	objs blockioObjects
	// layout is how this kernel encodes bi_opf (kernelFacts).
	layout OpfLayout
	// queueSide feed the in-flight map; doneSide drain it. They are
	// detached in that order so that bios queued before the stop can
	// still complete.
	queueSide, doneSide []link.Link
	// attached lists the programs attached, for their recursion-miss
	// counts (runs the kernel skipped).
	attached []attach
	rd       *ringbuf.Reader
	// startup times Load's and Attach's phases (counters at Attach's end).
	startup *phase.Timer

	dec *Decoder

	mu sync.Mutex // guards what follows
	// witness finds completions no program saw in the kernel's trace
	// buffer (nil without it); unseenFound counts those found for bios
	// the programs reported unseen (StatUnseen counts the rest).
	witness     *witness
	unseenFound uint64
	// answers are the completions FillDone took from the witness, and
	// those unseen took since, by bio.
	answers fillAnswers
	devs    *Devices
	user    event.Stats // counters kept in user space
	kernel  event.Stats // last kernel counter snapshot, once detached
	stopped bool
	closed  bool
}

// attach is one program and its tracepoint.
type attach struct {
	name     string
	prog     *ebpf.Program
	queue    bool // feeds the in-flight map
	optional bool // a kernel may lack it
}

// Open loads the block programs, attaches them and starts collecting. It
// needs root (or CAP_BPF with CAP_PERFMON) and a kernel with BTF. It is
// [Load] then [Tracer.Attach] with opts.Origin.
func Open(opts Options) (*Tracer, error) {
	t, err := Load(opts)
	if err != nil {
		return nil, err
	}
	if err := t.Attach(opts.Origin); err != nil {
		t.closeAll()
		return nil, err
	}
	return t, nil
}

// Load loads the block programs without attaching them: the slow part of
// [Open] (the verifier), which a caller can run side by side with loading
// its own programs. [Tracer.Attach] attaches them; Close releases them.
// opts.Origin is not used (Attach takes it). The completion witness
// (Options.NoWitness) is made meanwhile and records from then on.
func Load(opts Options) (*Tracer, error) {
	// The witness's tracefs instance, its events enabled, took 6-10 ms:
	// made beside the load, it is off the path from Load to Attach's end.
	witnessDone := make(chan *witness, 1)
	var witnessTook time.Duration
	go func() {
		var w *witness
		if !opts.NoWitness {
			t0 := time.Now()
			var err error
			if w, err = openWitness(&opts); err != nil {
				opts.warnf("block I/O: no completion witness, completions the kernel does not deliver to BPF programs will have no latency: " + err.Error())
			}
			witnessTook = time.Since(t0)
		}
		witnessDone <- w
	}()
	t, err := load(opts)
	w := <-witnessDone
	if err != nil {
		if w != nil {
			_ = w.close()
		}
		return nil, err
	}
	if w != nil {
		w.layout = t.layout
		t.witness = w
		t.startup.Add(phaseWitness, witnessTook)
	}
	return t, nil
}

// load is Load without the witness.
func load(opts Options) (*Tracer, error) {
	if opts.BufferSize <= 0 {
		opts.BufferSize = DefaultBufferSize
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Sysfs == "" {
		opts.Sysfs = "/sys"
	}

	spec, err := loadBlockio()
	if err != nil {
		return nil, fmt.Errorf("blockio: parse embedded BPF object: %w", err)
	}
	kt := opts.KernelTypes
	if kt == nil {
		kt = btf.NewCache()
	}
	// What is read from the kernel's BTF comes from its raw blob: the maps
	// are created while the full parse of its types, which the programs
	// need, runs.
	info, err := kernelFacts(opts.RawKernel, kt.Kernel)
	if err != nil {
		opts.warnf("block I/O: " + err.Error())
	}

	if err := configure(spec, &opts, info); err != nil {
		return nil, err
	}
	repl, err := sharedMaps(spec, &opts)
	if err != nil {
		return nil, err
	}

	t := &Tracer{opts: opts, filtered: opts.PidFilter != nil, layout: info.layout, startup: phase.New(StartupPrefix)}
	pending, err := bpfload.CreateMaps(spec, &t.objs, ebpf.CollectionOptions{MapReplacements: repl, Cache: kt}, nil)
	if err == nil {
		if _, kerr := kt.Kernel(); kerr != nil {
			pending.Close()
			_ = t.objs.Close()
			return nil, fmt.Errorf("blockio: kernel BTF (/sys/kernel/btf/vmlinux) is needed: %w", kerr)
		}
		err = pending.Programs(&t.objs)
	}
	if err != nil {
		_ = t.objs.Close() // the maps, when a program failed
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("blockio: load BPF programs: %+v", ve)
		}
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("blockio: load BPF programs: %w (needs root, or CAP_BPF and CAP_PERFMON)", err)
		}
		return nil, fmt.Errorf("blockio: load BPF programs: %w", err)
	}
	return t, nil
}

// Attach attaches the programs [Load] loaded and starts collecting, with
// origin the kernel clock value of trace time 0 (as Options.Origin). On
// error the caller closes t.
func (t *Tracer) Attach(origin int64) error {
	opts := &t.opts
	opts.Origin = origin
	ph := t.startup
	ph.Begin()
	// The witness, made by Load, already records the completion of every
	// bio queued under the tracer.
	if err := t.attachPrograms(); err != nil {
		return err
	}
	ph.Done(phaseAttach)
	var err error
	t.rd, err = ringbuf.NewReader(t.objs.Events)
	if err != nil {
		return fmt.Errorf("blockio: ring buffer reader: %w", err)
	}
	t.dec = NewDecoder(t.layout, origin)
	t.dec.Stacks = opts.Stacks != backend.StacksNone
	t.devs = NewDevices(opts.Sysfs)
	if _, err := t.devs.Scan(0); err != nil {
		opts.warnf("block I/O: list block devices: " + err.Error())
	}
	ph.Done(phaseReader)
	t.mu.Lock()
	ph.AddTo(&t.user)
	t.mu.Unlock()
	return nil
}

// Load's and Attach's phases, timed as counters (StartupPrefix).
const (
	phaseWitness = "create the witness (tracefs instance, beside the load)"
	phaseAttach  = "attach the programs"
	phaseReader  = "ring buffer reader, devices"
)

// configure sets the BPF object's constants and maps from opts and what
// the kernel's BTF says (kernelFacts).
func configure(spec *ebpf.CollectionSpec, opts *Options, info kernelInfo) error {
	set := func(name string, v any) error {
		vs, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("blockio: BPF object lacks variable %s", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("blockio: set %s: %w", name, err)
		}
		return nil
	}
	wakeup := uint64(opts.BufferSize / 8)
	for _, kv := range []struct {
		name string
		v    any
	}{
		{"bio_pinned_bit", info.pinned},
		{"self_tgid", opts.ExcludePid},
		{"filter_pids", opts.PidFilter != nil},
		{"clock_monotonic", opts.Monotonic},
		{"wakeup_bytes", wakeup},
		{"stack_mode", uint8(opts.Stacks)}, // STACKS_USER | STACKS_KERNEL
		{"pc_records", opts.PageCache != nil},
		{"page_shift", uint32(pageShift())},
		{"pc_wakeup_bytes", max(opts.PageCacheWakeup, 4096)},
		{"unwind_mode", opts.Unwind != nil},
		{"unwind_page_shift", unwindPageShift(opts.Unwind)},
		{"cfg_thread_slot_mask", threadSlotMask(opts.ThreadSlots)},
	} {
		if err := set(kv.name, kv.v); err != nil {
			return err
		}
	}
	spec.Maps["events"].MaxEntries = ringSize(opts.BufferSize)
	spec.Maps["bios"].MaxEntries = uint32(opts.MaxInFlight)
	if opts.maxRequests > 0 {
		spec.Maps["rqs"].MaxEntries = uint32(opts.maxRequests)
	}
	if !opts.inFlightLRU {
		preallocatePlain(spec)
	}

	// A stack-trace map preallocates every bucket (16 MiB): one when no
	// stacks are taken.
	if opts.Stacks == backend.StacksNone {
		spec.Maps["stacks"].MaxEntries = 1
	}
	// Without the syscall side's thread slots the object's own are
	// never written: one.
	if opts.ThreadSlots == nil {
		spec.Maps["thread_slots"].MaxEntries = 1
	}
	// The inodes traced processes dirtied (an LRU map, preallocated: 2-5
	// ms to create) are looked up only with the pid filter.
	if opts.PidFilter == nil {
		spec.Maps["dirty_inodes"].MaxEntries = 1
	}
	// The page-cache reads in flight per inode (an LRU map of 16,384
	// entries: 4-6 ms to create) are read by the system-call programs
	// only, through Options.InodeIO: without it nobody reads them.
	if opts.InodeIO == nil {
		spec.Maps["inode_io"].MaxEntries = 1
	}
	return nil
}

// threadSlotMask is the index mask of the array of thread slots m (its
// size, a power of two, less 1; 0 without it).
func threadSlotMask(m *ebpf.Map) uint32 {
	if m == nil || m.MaxEntries() == 0 {
		return 0
	}
	return m.MaxEntries() - 1
}

// inFlightMaps are the maps preallocatePlain changes: the bios in flight
// (added at queue, deleted at completion) and the requests' issue times
// (added at issue, deleted at the final completion or a requeue). An
// issue time a full map could not keep is counted (StatRqFull), and its
// events say they have none; one left behind (a completion not seen) is
// replaced when its request, a reused struct, is issued again.
var inFlightMaps = []string{"bios", "rqs"}

// preallocatePlain makes inFlightMaps plain hash maps, preallocated,
// instead of the object's LRU hash maps. A full plain map fails the
// insert, which the programs count (StatMapFull, StatRqFull), where an
// LRU map evicts the oldest entry, a bio maybe still in flight, silently.
// Left behind entries (a completion the programs did not see) go when
// their address is queued again (StatUnseen), or at stop.
//
// Preallocated, not allocated as entries come (BPF_F_NO_PREALLOC, as
// from issue 28 until 2026-11-29): the kernel allocates those with
// bpf_mem_alloc, which frees entries after an RCU Tasks Trace grace
// period, and a bio is freed on the CPU that completes it, not the one
// that queued it, so the frees spill over and keep such grace periods
// running as long as disks are busy. Meanwhile every system call tracepoint
// (they are faultable: their probes run under rcu_read_lock_trace) ends
// through rcu_read_unlock_trace_special: 1.0-1.4 % of a traced pread64
// loop's CPU with O_DIRECT writes beside it, 0 preallocated (perf, 2-vCPU
// machine). Creating the 65,536-entry bios map preallocated takes
// 3.1-3.5 ms there against 0.6 ms.
func preallocatePlain(spec *ebpf.CollectionSpec) {
	for _, name := range inFlightMaps {
		m := spec.Maps[name]
		m.Type = ebpf.Hash
		m.Flags &^= unix.BPF_F_NO_PREALLOC
	}
}

// sharedMaps returns the maps of the syscall side's that replace the
// object's own (opts' CurSyscall, InodeIO, StackMap, Unwind, PageCache
// and PidFilter), each checked to be the map the programs expect.
func sharedMaps(spec *ebpf.CollectionSpec, opts *Options) (map[string]*ebpf.Map, error) {
	repl := map[string]*ebpf.Map{}
	// A thread's state is in one of the two: both or neither.
	if (opts.CurSyscall == nil) != (opts.ThreadSlots == nil) {
		return nil, errors.New("blockio: Options.CurSyscall and Options.ThreadSlots go together (a thread's state is in one or the other)")
	}
	if m := opts.ThreadSlots; m != nil && m.MaxEntries()&(m.MaxEntries()-1) != 0 {
		return nil, fmt.Errorf("blockio: Options.ThreadSlots has %d entries, want a power of two", m.MaxEntries())
	}
	// The syscall side's maps, shared (layouts in backend/ebpf/bpf/cur_syscall.h).
	shared := []sharedMap{{"cur_syscall", "CurSyscall", "struct syscall_state", opts.CurSyscall},
		{"thread_slots", "ThreadSlots", "struct thread_slot", opts.ThreadSlots}, {"inode_io", "InodeIO", "struct inode_io", opts.InodeIO},
		{"stacks", "StackMap", "a stack-trace map", opts.StackMap}}
	if u := opts.Unwind; u != nil {
		shared = append(shared, []sharedMap{{"unwind_files", "Unwind.Files", "struct unwind_file by struct unwind_file_key", u.Files},
			{"unwind_rows", "Unwind.Rows", "struct unwind_row", u.Rows}, {"unwind_rules", "Unwind.Rules", "struct unwind_rule", u.Rules},
			{"ustacks", "Unwind.UStacks", "struct ustack", u.UStacks}}...)
	}
	for _, x := range shared {
		if x.m == nil {
			continue
		}
		want := spec.Maps[x.name]
		if m := x.m; m.Type() != want.Type || m.KeySize() != want.KeySize || m.ValueSize() != want.ValueSize {
			return nil, fmt.Errorf("blockio: Options.%s is a %s map with key size %d and value size %d, want %s with %d and %d (%s)",
				x.field, m.Type(), m.KeySize(), m.ValueSize(), want.Type, want.KeySize, want.ValueSize, x.value)
		}
		adopt(want, x.m)
		repl[x.name] = x.m
	}
	if m := opts.PageCache; m != nil {
		if m.Type() != ebpf.RingBuf {
			return nil, fmt.Errorf("blockio: Options.PageCache is a %s map, want the syscall side's ring buffer", m.Type())
		}
		adopt(spec.Maps["pc_ring"], m)
		repl["pc_ring"] = m
	}
	if m := opts.PidFilter; m != nil {
		if m.KeySize() != 4 || m.ValueSize() == 0 {
			return nil, fmt.Errorf("blockio: Options.PidFilter has key size %d and value size %d, want a __u32 tgid key", m.KeySize(), m.ValueSize())
		}
		adopt(spec.Maps["pid_filter"], m)
		repl["pid_filter"] = m
	}
	return repl, nil
}

// attachPrograms attaches the programs to their tracepoints, the
// completion side first, the queue side last: no bio is queued under
// the tracer without its completion being watched too. (One after the
// other: attached from 9 goroutines they took 3.7-9 ms against 2.5-2.9,
// the kernel registering one tracepoint probe at a time.) A tracepoint a
// kernel may lack is warned about; any other failure is an error (the
// caller closes what was attached).
func (t *Tracer) attachPrograms() error {
	p := &t.objs.blockioPrograms
	plan := []attach{
		{name: "block_rq_complete", prog: p.BlockRqComplete},
		{name: "block_bio_complete", prog: p.BlockBioComplete, optional: true},
		{name: "block_rq_issue", prog: p.BlockRqIssue},
		{name: "block_rq_requeue", prog: p.BlockRqRequeue, optional: true},
		{name: "block_bio_remap", prog: p.BlockBioRemap, optional: true},
		{name: "block_split", prog: p.BlockSplit, queue: true},
		{name: "block_bio_queue", prog: p.BlockBioQueue, queue: true},
	}
	if t.filtered {
		plan = append(plan, attach{name: "writeback_mark_inode_dirty", prog: p.WritebackMarkInodeDirty, queue: true, optional: true})
	}
	for _, a := range plan {
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: a.name, Program: a.prog})
		if err != nil {
			if a.optional {
				t.opts.warnf(fmt.Sprintf("block I/O: tracepoint %s not attached (%v); its events are not counted", a.name, err))
				continue
			}
			return fmt.Errorf("blockio: attach raw tracepoint %s: %w", a.name, err)
		}
		t.attached = append(t.attached, a)
		if a.queue {
			t.queueSide = append(t.queueSide, l)
		} else {
			t.doneSide = append(t.doneSide, l)
		}
	}
	return nil
}

// adopt makes a map spec match a map the caller passes in, so that
// MapReplacements accepts it.
func adopt(s *ebpf.MapSpec, m *ebpf.Map) {
	s.Type = m.Type()
	s.KeySize = m.KeySize()
	s.ValueSize = m.ValueSize()
	s.MaxEntries = m.MaxEntries()
	s.Flags = m.Flags()
}

// pageShift returns log2 of the page size.
func pageShift() int {
	n := 0
	for p := os.Getpagesize(); p > 1; p >>= 1 {
		n++
	}
	return n
}

// ringSize rounds n up to a power of two of at least one page.
func ringSize(n int) uint32 {
	size := uint32(os.Getpagesize())
	for int(size) < n && size < 1<<30 {
		size <<= 1
	}
	return size
}

// Run reads block events and calls emit for each, until ctx is done. Then
// it detaches the queue side, lets bios in flight complete for a moment,
// detaches the rest, drains the ring buffer and emits the bios that never
// completed (FlagNoCompletion), so nothing queued under the tracer is
// left out. The *event.Event passed to emit is reused: copy it to keep
// it. Run may be called once.
func (t *Tracer) Run(ctx context.Context, emit func(*event.Event)) error {
	t.mu.Lock()
	if t.closed || t.stopped {
		t.mu.Unlock()
		return errors.New("blockio: Run on a closed or stopped tracer")
	}
	t.mu.Unlock()

	// Wake the reader as soon as ctx is done, not at its next poll: a
	// flushed reader returns what the ring holds, then ErrFlushed.
	unwake := context.AfterFunc(ctx, func() { _ = t.rd.Flush() })
	defer unwake()
	s := &runState{t: t, emit: emit}
	lastLoss, nextLoss := uint64(0), time.Now().Add(time.Second)
	for ctx.Err() == nil {
		if err := s.read(time.Now().Add(t.opts.PollInterval)); err != nil {
			return err
		}
		t.drainWitness()
		if now := time.Now(); now.After(nextLoss) {
			nextLoss = now.Add(time.Second)
			if lost := t.lost(); lost > lastLoss {
				t.opts.warnf(fmt.Sprintf("block I/O: ring buffer full, %d block events lost so far", lost))
				lastLoss = lost
			}
		}
	}
	return t.stop(s)
}

// Stop's phases, timed as counters (StopPrefix).
const (
	phaseDetachQueue = "detach the queue side"
	phaseSettle      = "let bios in flight complete"
	phaseDrain       = "detach the completion side, drain"
	phaseInFlight    = "report bios in flight"
)

// settleMax bounds how long the stop waits for bios in flight to complete.
const settleMax = 200 * time.Millisecond

// stop ends Run: no new bios; those in flight get up to settleMax to
// complete (looked for after 1 ms, then at twice the last wait, up to the
// poll interval), then the completion side is detached, the ring buffer
// drained, and what is left in the in-flight map is emitted. The witness
// is read for the last time once nothing it could still see matters: as
// soon as no bio is in flight (no completion is left to miss), else once
// the completion side is detached; its tracefs instance is then removed in
// the background, beside the rest (Close waits for it).
func (t *Tracer) stop(s *runState) error {
	ph := phase.New(StopPrefix)
	closeLinks(t.queueSide)
	t.queueSide = nil
	ph.Done(phaseDetachQueue)
	settle := time.Now().Add(settleMax)
	idle := !t.inFlight()
	for step := time.Millisecond; !idle && time.Now().Before(settle); step = min(2*step, t.opts.PollInterval) {
		if err := s.read(time.Now().Add(min(step, time.Until(settle)))); err != nil {
			return err
		}
		idle = !t.inFlight()
	}
	if idle {
		t.finishWitness()
	}
	ph.Done(phaseSettle)
	closeLinks(t.doneSide)
	t.doneSide = nil
	if err := s.read(time.Now()); err != nil {
		return err
	}
	t.finishWitness()
	ph.Done(phaseDrain)
	n, err := t.emitInFlight(s)
	ph.Done(phaseInFlight)
	t.mu.Lock()
	t.user.Add(event.CountUnpaired, StatInFlight, n)
	ph.AddTo(&t.user)
	t.kernel = t.kernelStats()
	t.stopped = true
	t.mu.Unlock()
	return err
}

// emitInFlight emits what is left in the in-flight map, which never
// completed under the tracer (unless the witness saw it complete), and
// returns how many had no completion.
func (t *Tracer) emitInFlight(s *runState) (uint64, error) {
	var (
		key  uint64
		info blockioBioInfo
		n    uint64
	)
	it := t.objs.Bios.Iterate()
	for it.Next(&key, &info) {
		if info.Flags&RecFillOnly != 0 {
			continue // an untraced process's page-cache read: no event
		}
		r := &s.r
		*r = recordOf(key, &info)
		if !t.unseen(r, &s.e, 0) {
			n++
		}
		s.emit(&s.e)
	}
	if err := it.Err(); err != nil {
		return n, fmt.Errorf("blockio: list bios in flight: %w", err)
	}
	return n, nil
}

// recordOf is the record of a bio still in the in-flight map.
func recordOf(key uint64, info *blockioBioInfo) Record {
	r := Record{
		Bio: key, QueueTS: info.QueueTs, Cause: info.Cause,
		Sector: info.QueueSector - info.StartSect, Inode: info.Inode, Bytes: info.QueueBytes,
		Opf: info.Opf, Dev: info.Dev, UStack: info.Ustack, KStack: info.Kstack,
		InoDev: info.InoDev, Pid: info.Pid, Tid: info.Tid, CPU: info.Cpu, Flags: info.Flags,
	}
	for i, c := range info.Comm {
		r.Comm[i] = byte(c)
	}
	return r
}

// runState is what Run keeps while it reads: the ring buffer's record,
// its decoding and the event emitted (both reused), the device last named.
type runState struct {
	t       *Tracer
	emit    func(*event.Event)
	rec     ringbuf.Record
	r       Record
	e       event.Event
	lastDev event.Device
}

// read reads records until the ring is empty and deadline has passed,
// or the reader was flushed (Run's context done) and the ring is empty.
func (s *runState) read(deadline time.Time) error {
	s.t.rd.SetDeadline(deadline)
	for {
		err := s.t.rd.ReadInto(&s.rec)
		switch {
		case err == nil:
			s.deliver()
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
			return nil
		default:
			return fmt.Errorf("blockio: read ring buffer: %w", err)
		}
	}
}

// deliver decodes the record read and emits its event.
func (s *runState) deliver() {
	t, r, e := s.t, &s.r, &s.e
	if err := r.Decode(s.rec.RawSample); err != nil {
		t.mu.Lock()
		t.user.Add(event.CountLost, StatMalformed, 1)
		t.mu.Unlock()
		return
	}
	if r.Flags&RecUnseen != 0 {
		t.unseen(r, e, r.DoneTS)
	} else {
		t.dec.Event(r, e)
		t.saw(r)
	}
	if e.Dev != s.lastDev {
		t.device(e.Dev, e.Time)
		s.lastDev = e.Dev
	}
	s.emit(e)
}

// unseen fills e for a bio whose completion no program saw: with the
// completion the witness kept (before time before; 0: now), or without
// completion. It reports whether the witness had it.
func (t *Tracer) unseen(r *Record, e *event.Event, before uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	var (
		w  witnessRec
		ok bool
	)
	if t.witness != nil {
		if w, ok = t.answers.take(r.Bio, r.QueueTS); ok {
			t.witness.found++ // FillDone took it from the witness uncounted
		} else if w, ok = t.witness.lookup(r, before); ok && r.Inode != 0 && t.layout.Op(r.Opf, r.Bytes) == event.OpBlockRead {
			// A page-cache read: a read of its pages may still ask.
			t.answers.put(r.Bio, fillAnswer{ino: r.Inode, inoDev: r.InoDev, queueTS: r.QueueTS, w: w})
		}
	}
	if ok {
		if r.Flags&RecUnseen != 0 {
			t.unseenFound++
		}
		t.dec.Witnessed(r, w, e)
		return true
	}
	t.dec.InFlight(r, e)
	return false
}

// saw tells the witness of a completion the programs saw.
func (t *Tracer) saw(r *Record) {
	t.mu.Lock()
	if t.witness != nil {
		t.witness.saw(r)
	}
	t.mu.Unlock()
}

// FillDone returns when q's fill completed, when no program saw it
// complete and the witness did; ok is false otherwise (a completion the
// programs saw, whose record has not come yet, included). Safe to call
// from another goroutine than Run's.
func (t *Tracer) FillDone(q FillQuery) (uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.witness == nil || t.closed {
		return 0, false
	}
	if ts, ok := t.answers.of(&q); ok {
		return ts, true
	}
	r := Record{Bio: q.Bio, QueueTS: q.After, Sector: q.Sector, Bytes: q.Bytes, Dev: q.Dev, Inode: q.Ino, InoDev: q.InoDev} // Opf 0: a read
	w, miss := t.witness.find(&r, q.Before)
	if miss != missNone {
		return 0, false
	}
	t.answers.put(q.Bio, fillAnswer{ino: q.Ino, inoDev: q.InoDev, queueTS: q.After, w: w})
	return w.ts, true
}

// finishWitness reads the witness for the last time and starts its
// removal (witness.finish).
func (t *Tracer) finishWitness() {
	t.mu.Lock()
	if t.witness != nil {
		t.witness.finish()
	}
	t.mu.Unlock()
}

// drainWitness reads the witness's buffers, so that they do not overrun.
func (t *Tracer) drainWitness() {
	t.mu.Lock()
	if t.witness != nil {
		t.witness.drain()
	}
	t.mu.Unlock()
}

// device names a device the first time an event refers to it.
func (t *Tracer) device(dev event.Device, ts int64) {
	t.mu.Lock()
	if t.devs.Known(dev) {
		t.mu.Unlock()
		return
	}
	f, ok := t.devs.Add(dev, ts, false)
	t.mu.Unlock()
	if ok && t.opts.Fact != nil {
		t.opts.Fact(&f)
	}
}

// inFlight reports whether any bio is still tracked.
func (t *Tracer) inFlight() bool {
	var key uint64
	err := t.objs.Bios.NextKey(nil, &key)
	return err == nil
}

// lost returns the ring-buffer reserve failures so far, on all CPUs.
func (t *Tracer) lost() uint64 {
	var vals []uint64
	if err := t.objs.Counters.Lookup(uint32(cLost), &vals); err != nil {
		return 0
	}
	var n uint64
	for _, v := range vals {
		n += v
	}
	return n
}

// kernelStats reads the per-CPU kernel counters.
func (t *Tracer) kernelStats() event.Stats {
	var perCPU [][numCounters]uint64
	var vals []uint64
	for i := uint32(0); i < numCounters; i++ {
		if err := t.objs.Counters.Lookup(i, &vals); err != nil {
			var s event.Stats
			s.Add(event.CountLost, "block counters unreadable: "+err.Error(), 1)
			return s
		}
		if perCPU == nil {
			perCPU = make([][numCounters]uint64, len(vals))
		}
		for cpu, v := range vals {
			if cpu < len(perCPU) {
				perCPU[cpu][i] = v
			}
		}
	}
	s := counterStats(perCPU, t.filtered)
	if t.unseenFound != 0 {
		// Found in the witness: an event with its completion, not lost.
		s.Set(event.CountLost, StatUnseen, s.Get(event.CountLost, StatUnseen)-min(t.unseenFound, s.Get(event.CountLost, StatUnseen)))
	}
	if t.witness != nil {
		s.Merge(t.witness.stats())
	}
	for _, a := range t.attached {
		if st, err := a.prog.Stats(); err == nil && st.RecursionMisses != 0 {
			s.Add(event.CountLost, StatMissed+a.name, st.RecursionMisses)
		}
	}
	return s
}

// Facts returns the devices known so far (those listed at Open, and those
// events referred to since): name and, for a partition, its disk.
func (t *Tracer) Facts() []event.Fact {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.devs.Facts()
}

// Stats returns what was received, lost and left unpaired so far (final
// once Run has returned).
func (t *Tracer) Stats() event.Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	var s event.Stats
	if t.stopped || t.closed {
		s.Merge(t.kernel)
	} else {
		s.Merge(t.kernelStats())
	}
	s.Merge(t.user)
	if t.dec != nil {
		s.Add(event.CountInfo, StatMerge, t.dec.Merges())
	}
	return s
}

// Close detaches every program and frees the maps. It is safe to call
// more than once; call it after Run has returned.
func (t *Tracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if !t.stopped {
		t.kernel = t.kernelStats()
	}
	t.closed = true
	return t.closeAll()
}

func (t *Tracer) closeAll() error {
	closeLinks(t.queueSide)
	closeLinks(t.doneSide)
	t.queueSide, t.doneSide = nil, nil
	var errs []error
	if t.rd != nil {
		errs = append(errs, t.rd.Close())
	}
	errs = append(errs, t.objs.Close())
	if t.witness != nil {
		errs = append(errs, t.witness.close())
	}
	return errors.Join(errs...)
}

func closeLinks(ls []link.Link) {
	for _, l := range ls {
		l.Close()
	}
}

// sharedMap is a map of the syscall side's that replaces the object's own.
type sharedMap struct {
	name, field, value string
	m                  *ebpf.Map
}

func unwindPageShift(u *UnwindMaps) uint8 {
	if u == nil {
		return 12
	}
	return u.PageShift
}
