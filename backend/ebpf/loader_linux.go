package ebpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf/internal/bpfload"
	"github.com/iotrace/iotrace/backend/ebpf/internal/rawbtf"
	"github.com/iotrace/iotrace/backend/ebpf/slots"
	"github.com/iotrace/iotrace/backend/ebpf/systable"
	"github.com/iotrace/iotrace/event"
)

// loadConfig is what the programs are specialised with at load time.
type loadConfig struct {
	selfTgid    uint32
	filterPids  bool
	followForks bool
	followSelf  bool
	comms       []string
	cause       bool
	ringSize    int
	wakeupBytes uint64
	stacks      backend.Stacks
	unwind      bool // user stacks walked by unwind tables (bpf/unwind.h)
	// threadSlots is the size of the array of thread slots (a power of
	// two; 0: DefaultThreadSlots).
	threadSlots int
	// attach is what will be attached: the programs nothing attaches
	// are not loaded.
	attach attachConfig
	// kernelTypes is the kernel's BTF, maybe being parsed already
	// (warmKernelTypes); nil: parsed when first needed.
	kernelTypes *btf.Cache
	// rawKernel is the kernel's raw BTF, parsed once for both loaders
	// (nil: parsed here).
	rawKernel *rawbtf.Shared
}

// warmKernelTypes parses the kernel's BTF and builds its name index, the
// slowest step of loading (20-40 ms), so that it can run beside the
// parse of the BPF objects: whoever needs it next waits for it in kt.
func warmKernelTypes(kt *btf.Cache) {
	if s, err := kt.Kernel(); err == nil {
		_, _ = s.AnyTypeByName("task_struct")
	}
}

// unusedPrograms are the programs of the object that ac does not attach.
func unusedPrograms(ac attachConfig) map[string]bool {
	skip := map[string]bool{}
	add := func(names ...string) {
		for _, n := range names {
			skip[n] = true
		}
	}
	if !ac.file {
		add("sys_enter", "sys_exit")
	}
	if !ac.iowait {
		add("sched_switch", "wb_written", "wb_start", "wb_queue", "pc_evict")
	}
	if !ac.uring {
		add("uring_complete", "uring_submit", "dio_begin", "dio_queued", "dio_complete")
	}
	return skip
}

// probes are the loaded programs and maps and the links attaching them.
type probes struct {
	objs iotraceObjects
	// enters, exits and others are detached in that order at the end
	// (detachEnters, detach): sched_process_exit, which frees a thread's
	// slot, after every program that finds one.
	enters, exits, others []link.Link
	rd                    *ringbuf.Reader
	// slots reads the per-CPU record slots (nil: none, every record
	// goes to the ring buffer); slotMem is their mapping.
	slots   *slots.Reader
	slotMem [][]byte
	// missing lists tracepoints this kernel lacks.
	missing []string
	ncpu    int
	// dio: the kernel has iomap's direct I/O tracepoints (see createProbes).
	dio bool
	// tp: how this kernel passes the arguments of the tracepoints that
	// changed between versions, and which of them it has.
	tp tpLayout
	// kernelTypes is the kernel's BTF, parsed once for every collection
	// loaded (the block tracer's too): each parse costs tens of ms.
	kernelTypes *btf.Cache
	// pending holds the programs between createProbes and loadPrograms.
	pending *bpfload.Pending
}

// stackMapEntries sizes the stacks map with --stacks: distinct stacks
// (user and kernel parts apart) it holds; a new one that finds its bucket
// taken is lost and counted (16 MiB of kernel memory).
const stackMapEntries = 16384

// readStack returns the frames of stack id in the stacks map.
func (p *probes) readStack(id int32) ([]uint64, error) {
	var v [maxStackDepth]uint64
	if err := p.objs.Stacks.Lookup(uint32(id), &v); err != nil {
		return nil, fmt.Errorf("stack %d: %w", id, err)
	}
	return trimFrames(append([]uint64(nil), v[:]...)), nil
}

// pageShift is log2 of the page size (a mapping's file offset is in
// pages).
func pageShift() uint8 {
	var s uint8
	for 1<<s < os.Getpagesize() {
		s++
	}
	return s
}

// ringSize rounds n up to a power of two of at least one page.
func ringSize(n int) uint32 {
	size := uint32(os.Getpagesize())
	for int(size) < n && size < 1<<30 {
		size <<= 1
	}
	return size
}

// slotShift returns log2 of the per-CPU record slots for a ring buffer of
// ringBytes on ncpu CPUs: as many records per CPU as the ring buffer
// holds per CPU, 2^10 to 2^12 (1,024 records: 176 KiB a CPU; 4,096:
// 704 KiB). More did not make the system-call path faster (16,384 against
// 4,096: 0.97x, within the noise) and costs memory (the kernel zeroes the
// array as it creates it, start-up time too): a record that finds its CPU's slots
// full goes through the ring buffer, which absorbs a reader that falls
// behind. The reader is woken every quarter of a CPU's slots.
func slotShift(ringBytes, ncpu int) uint {
	per := ringBytes / max(ncpu, 1) / slotStride
	shift := uint(10)
	for shift < 12 && 2<<shift <= per {
		shift++
	}
	return shift
}

// slotStride is the bytes of a slot: its state and a syscall record.
const slotStride = slots.StateSize + syscallSize

// mapSlots maps the slots and tails arrays and returns their reader.
func mapSlots(data, tails *ebpf.Map, l slots.Layout) (*slots.Reader, [][]byte, error) {
	if int(data.ValueSize()) != l.Stride {
		return nil, nil, fmt.Errorf("ebpf: slot of %d bytes, want %d", data.ValueSize(), l.Stride)
	}
	var mems [][]byte
	unmap := func() {
		for _, m := range mems {
			_ = unix.Munmap(m)
		}
	}
	page := os.Getpagesize()
	// The slots are only read here; the tails are written.
	for _, x := range []struct {
		m    *ebpf.Map
		size int
		prot int
	}{{data, l.Size(), unix.PROT_READ}, {tails, l.TailsSize(), unix.PROT_READ | unix.PROT_WRITE}} {
		size := (x.size + page - 1) &^ (page - 1)
		mem, err := unix.Mmap(x.m.FD(), 0, size, x.prot, unix.MAP_SHARED)
		if err != nil {
			unmap()
			return nil, nil, fmt.Errorf("ebpf: map the record slots (%d bytes): %w", size, err)
		}
		mems = append(mems, mem)
	}
	rd, err := slots.New(mems[0], mems[1], l)
	if err != nil {
		unmap()
		return nil, nil, err
	}
	return rd, mems, nil
}

// hasDio reports whether the kernel has iomap's direct I/O tracepoints.
func hasDio(ks *rawbtf.Spec) bool {
	has := func(tp string) bool { _, ok := ks.ByName(rawbtf.KindTypedef, "btf_trace_"+tp); return ok }
	return has("iomap_dio_rw_begin") && has("iomap_dio_rw_queued") && has("iomap_dio_complete")
}

// absentPrograms are the programs whose tracepoints this kernel lacks (or
// passes arguments they do not read): neither loaded nor attached.
func absentPrograms(dio bool, tp tpLayout) []string {
	var out []string
	for _, x := range []struct {
		name    string
		present bool
	}{{"dio_begin", dio}, {"dio_queued", dio}, {"dio_complete", dio},
		{"uring_submit", tp.uringSubmit}, {"uring_complete", tp.uringComplete}, {"pc_evict", tp.evict}} {
		if !x.present {
			out = append(out, x.name)
		}
	}
	return out
}

// createProbes reads the BPF object, specialises it with cfg and creates
// its maps; loadPrograms loads the programs. In between, the block
// programs, which share these maps, can begin loading (blockload_linux.go).
func createProbes(cfg loadConfig) (*probes, error) {
	spec, err := loadIotrace()
	if err != nil {
		return nil, fmt.Errorf("ebpf: read embedded BPF object: %w", err)
	}
	spec.Maps["rb"].MaxEntries = ringSize(cfg.ringSize)
	p := &probes{kernelTypes: cfg.kernelTypes}
	if p.kernelTypes == nil {
		p.kernelTypes = btf.NewCache()
	}
	skip := unusedPrograms(cfg.attach)
	// Tracepoints this kernel lacks (or passes arguments the programs do
	// not read) are left out: their programs are neither loaded nor
	// attached, and attach lists them as missing. The direct I/O
	// boundaries of asynchronous requests (iomap's tracepoints) exist only
	// in kernels built with iomap. Read from the raw BTF (rawbtf), not
	// from the full parse of the kernel's types that the program loads
	// need: that one runs meanwhile (warmKernelTypes), and the maps are
	// created without it.
	if ks, release, err := cfg.rawKernel.Get(); err == nil {
		p.dio = hasDio(ks)
		p.tp = readTPLayout(ks)
		release()
	}
	tp := p.tp
	for _, name := range absentPrograms(p.dio, tp) {
		skip[name] = true
	}
	// A stack-trace map preallocates its buckets (1 KiB each): one when
	// no stacks are taken.
	spec.Maps["stacks"].MaxEntries = 1
	if cfg.stacks != backend.StacksNone {
		spec.Maps["stacks"].MaxEntries = stackMapEntries
	}
	if cfg.unwind {
		spec.Maps["unwind_files"].MaxEntries = unwindMaxFiles
		spec.Maps["unwind_rows"].MaxEntries = unwindMaxRows
		spec.Maps["unwind_rules"].MaxEntries = unwindMaxRules
		spec.Maps["ustacks"].MaxEntries = stackMapEntries
	}
	// Per-CPU record slots for the system-call records that need nothing
	// sent ahead of them; with user stacks every record goes to the ring
	// buffer (behind its stack).
	p.ncpu, err = ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("ebpf: count possible CPUs: %w", err)
	}
	var slotLayout slots.Layout
	if cfg.attach.file && cfg.stacks&backend.StacksUser == 0 {
		slotLayout = slots.Layout{CPUs: p.ncpu, Shift: slotShift(cfg.ringSize, p.ncpu), Stride: slotStride, Record: syscallSize}
		spec.Maps["slots"].MaxEntries = uint32(slotLayout.Size() / slotStride)
		spec.Maps["slot_tails"].MaxEntries = uint32(p.ncpu)
	}
	slotsN := cfg.threadSlots
	if slotsN == 0 {
		slotsN = DefaultThreadSlots
	}
	if slotsN < 0 || slotsN > 1<<20 || slotsN&(slotsN-1) != 0 {
		return nil, fmt.Errorf("ebpf: %d thread slots: want a power of two up to %d", slotsN, 1<<20)
	}
	if !cfg.attach.file {
		slotsN = 1 // nothing takes a slot
	}
	spec.Maps["thread_slots"].MaxEntries = uint32(slotsN)
	b2u := func(b bool) uint8 {
		if b {
			return 1
		}
		return 0
	}
	for name, v := range map[string]any{
		"cfg_self_tgid":        cfg.selfTgid,
		"cfg_filter_pids":      b2u(cfg.filterPids),
		"cfg_follow_forks":     b2u(cfg.followForks),
		"cfg_follow_self":      b2u(cfg.followSelf),
		"cfg_filter_comm":      b2u(len(cfg.comms) > 0),
		"cfg_cause":            b2u(cfg.cause),
		"cfg_wakeup_bytes":     cfg.wakeupBytes,
		"cfg_stacks":           uint8(cfg.stacks), // STACKS_USER | STACKS_KERNEL: TestStacksBits
		"cfg_page_shift":       uint32(pageShift()),
		"cfg_unwind":           b2u(cfg.unwind),
		"unwind_page_shift":    pageShift(),
		"cfg_uring_cqe":        b2u(tp.uringCQE),
		"cfg_evict_page":       b2u(tp.evictPage),
		"cfg_slot_shift":       uint32(slotLayout.Shift),
		"cfg_tso":              b2u(runtime.GOARCH == "amd64" || runtime.GOARCH == "386"),
		"cfg_thread_slot_mask": uint32(slotsN - 1),
	} {
		vs, ok := spec.Variables[name]
		if !ok {
			return nil, fmt.Errorf("ebpf: BPF object has no variable %s", name)
		}
		if err := vs.Set(v); err != nil {
			return nil, fmt.Errorf("ebpf: set %s: %w", name, err)
		}
	}
	// The page-cache reads in flight per inode (an LRU map: 4-6 ms to
	// create) link reads to block I/O and select the evictions recorded:
	// only when both layers are traced.
	if !cfg.cause && !cfg.attach.iowait {
		spec.Maps["inode_io"].MaxEntries = 1
	}
	noPrealloc(spec)
	p.pending, err = bpfload.CreateMaps(spec, &p.objs, ebpf.CollectionOptions{Cache: p.kernelTypes}, skip)
	if err != nil {
		return nil, loadError(err)
	}
	for _, c := range cfg.comms {
		var k [commLen]byte
		copy(k[:commLen-1], c)
		if err := p.objs.Comms.Put(k, uint8(1)); err != nil {
			p.close()
			return nil, fmt.Errorf("ebpf: comm filter %q: %w", c, err)
		}
	}
	if slotLayout.Shift != 0 {
		if p.slots, p.slotMem, err = mapSlots(p.objs.Slots, p.objs.SlotTails, slotLayout); err != nil {
			p.close()
			return nil, err
		}
	}
	p.rd, err = ringbuf.NewReader(p.objs.Rb)
	if err != nil {
		p.close()
		return nil, fmt.Errorf("ebpf: ring buffer reader: %w", err)
	}
	return p, nil
}

// loadProbes creates the maps and loads the programs.
func loadProbes(cfg loadConfig) (*probes, error) {
	p, err := createProbes(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.loadPrograms(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// loadPrograms loads the programs createProbes left to load.
func (p *probes) loadPrograms() error {
	pending := p.pending
	p.pending = nil
	if err := pending.Programs(&p.objs); err != nil {
		return loadError(err)
	}
	return nil
}

// loadError says why the programs could not be loaded.
func loadError(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("ebpf: the kernel's verifier rejected a program: %+v", ve)
	}
	if errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("ebpf: load BPF programs: %w (needs root or CAP_BPF+CAP_PERFMON, and a kernel with BTF, ring buffers and attach cookies: 5.15 or later)", err)
	}
	return fmt.Errorf("ebpf: load BPF programs: %w", err)
}

// sparseMaps are hash maps that hold few entries most of the time, written
// rarely (per process, per asynchronous request): allocated as entries
// come rather than all at load, which costs start-up time (the kernel
// fills a free list of max_entries elements per map).
var sparseMaps = []string{"pids", "comms", "uring_inflight", "aio_inflight", "aio_tgids", "wb_works"}

// noPrealloc makes the sparse maps allocate their entries as they come.
func noPrealloc(spec *ebpf.CollectionSpec) {
	for _, name := range sparseMaps {
		if m, ok := spec.Maps[name]; ok && m.Type == ebpf.Hash {
			m.Flags |= unix.BPF_F_NO_PREALLOC
		}
	}
}

// addPids adds tgids to the pid filter.
func (p *probes) addPids(pids []uint32) error {
	for _, pid := range pids {
		if err := p.objs.Pids.Put(pid, uint8(1)); err != nil {
			return fmt.Errorf("ebpf: add pid %d to the filter: %w", pid, err)
		}
	}
	return nil
}

// attachConfig selects what to attach (and so what to load).
type attachConfig struct {
	file  bool                // syscalls
	ops   *[event.NumOps]bool // ops wanted, nil: all
	uring bool
	// iowait: mark calls that slept for I/O (sched_switch), for telling
	// reads that waited for I/O in flight from cache hits.
	iowait bool
}

// attach enables the selected system calls in sys_kinds and attaches the
// sched programs, sys_exit, sys_enter (after its exit, so that no enter
// goes without its exit program), then io_uring. System calls this
// architecture lacks and missing io_uring tracepoints are listed in
// p.missing; other failures are errors.
func (p *probes) attach(ac attachConfig) error {
	for _, prog := range []*ebpf.Program{p.objs.SchedFork, p.objs.SchedExec, p.objs.SchedExit, p.objs.TaskRename} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return fmt.Errorf("ebpf: attach %s (tp_btf): %w", prog, err)
		}
		p.others = append(p.others, l)
	}
	if ac.file {
		var nrs, cookies []uint64
		var names []string
		for c := systable.Call(1); c <= systable.Calls(); c++ {
			row := systable.Lookup(c)
			if async(row) {
				// io_submit, the reaping calls and io_uring_enter go
				// with the asynchronous requests.
				if !ac.uring {
					continue
				}
			} else if ac.ops != nil && !ac.ops[row.Op] && row.Flags&systable.KeepNames == 0 {
				continue
			}
			nr, ok := row.Number(runtime.GOARCH)
			if !ok {
				p.missing = append(p.missing, row.Name+" (no such system call on "+runtime.GOARCH+")")
				continue
			}
			nrs = append(nrs, uint64(nr))
			cookies = append(cookies, cookie(c))
			names = append(names, row.Name)
		}
		if len(nrs) == 0 {
			return fmt.Errorf("ebpf: no system call to trace on %s: %w", runtime.GOARCH, backend.ErrNotSupported)
		}
		if err := p.enableCalls(names, nrs, cookies); err != nil {
			return err
		}
		// Exit first, so that every enter recorded finds its exit.
		for _, x := range []struct {
			name string
			prog *ebpf.Program
			to   *[]link.Link
		}{{"sys_exit", p.objs.SysExit, &p.exits}, {"sys_enter", p.objs.SysEnter, &p.enters}} {
			l, err := link.AttachTracing(link.TracingOptions{Program: x.prog})
			if err != nil {
				return fmt.Errorf("ebpf: attach BTF tracepoint %s: %w", x.name, err)
			}
			*x.to = append(*x.to, l)
		}
	}
	if ac.iowait {
		// sched_switch: reads that waited for I/O in flight; the
		// writeback programs: the flusher's work a sync call waits for.
		for _, prog := range []*ebpf.Program{p.objs.SchedSwitch, p.objs.WbWritten, p.objs.WbStart, p.objs.WbQueue} {
			l, err := link.AttachTracing(link.TracingOptions{Program: prog})
			if err != nil {
				return fmt.Errorf("ebpf: attach %s (tp_btf): %w", prog, err)
			}
			p.others = append(p.others, l)
		}
		if err := p.attachEvict(); err != nil {
			return err
		}
	}
	if ac.uring {
		// BTF tracepoints, not perf-event ones: closing a perf-event
		// tracepoint waits for tracepoint_synchronize_unregister (50-100
		// ms each, one after the other, here).
		for _, x := range []struct {
			name    string
			prog    *ebpf.Program
			present bool
		}{{"io_uring_complete", p.objs.UringComplete, p.tp.uringComplete}, {"io_uring_submit_req", p.objs.UringSubmit, p.tp.uringSubmit}} {
			if !x.present {
				p.missing = append(p.missing, "io_uring:"+x.name)
				continue
			}
			l, err := link.AttachTracing(link.TracingOptions{Program: x.prog})
			if err != nil {
				return fmt.Errorf("ebpf: attach io_uring:%s (tp_btf): %w", x.name, err)
			}
			p.others = append(p.others, l)
		}
		// The block I/O of one direct I/O belongs to its request.
		if !p.dio {
			p.missing = append(p.missing, "iomap:iomap_dio_rw_begin (block I/O of io_uring workers and multi-request io_submit calls is not linked to its request)")
		} else {
			for _, prog := range []*ebpf.Program{p.objs.DioComplete, p.objs.DioQueued, p.objs.DioBegin} {
				l, err := link.AttachTracing(link.TracingOptions{Program: prog})
				if err != nil {
					return fmt.Errorf("ebpf: attach %s (tp_btf): %w", prog, err)
				}
				p.others = append(p.others, l)
			}
		}
	}
	sort.Strings(p.missing)
	return nil
}

// detachEnters stops new syscalls from being recorded; exits still pair
// the calls in flight.
func (p *probes) detachEnters() {
	closeLinks(p.enters)
	p.enters = nil
}

// detach closes every link.
func (p *probes) detach() {
	closeLinks(p.enters)
	closeLinks(p.exits)
	closeLinks(p.others)
	p.enters, p.others, p.exits = nil, nil, nil
}

// enableCalls writes the descriptors of the system calls traced into
// sys_kinds: in one batch (one bpf(2) call for the ~120 entries, not one
// each), or one by one where the kernel has no batch operations on
// arrays (before 5.6).
func (p *probes) enableCalls(names []string, nrs, cookies []uint64) error {
	keys := make([]uint32, len(nrs))
	for i, nr := range nrs {
		keys[i] = uint32(nr)
	}
	if _, err := p.objs.SysKinds.BatchUpdate(keys, cookies, nil); err == nil {
		return nil
	}
	for i, k := range keys {
		if err := p.objs.SysKinds.Put(k, cookies[i]); err != nil {
			return fmt.Errorf("ebpf: enable %s (nr %d): %w", names[i], k, err)
		}
	}
	return nil
}

// closeLinks closes ls concurrently: each detach waits for an RCU grace
// period (tens of ms), and the waits overlap.
func closeLinks(ls []link.Link) {
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.Close()
		}()
	}
	wg.Wait()
}

func (p *probes) close() {
	p.detach()
	if p.pending != nil {
		p.pending.Close()
		p.pending = nil
	}
	if p.rd != nil {
		_ = p.rd.Close()
	}
	for _, m := range p.slotMem {
		_ = unix.Munmap(m)
	}
	p.slotMem, p.slots = nil, nil
	_ = p.objs.Close()
}

// counters reads the per-CPU kernel counters.
func (p *probes) counters() ([numCounters][]uint64, error) {
	var out [numCounters][]uint64
	for i := range out {
		vals := make([]uint64, p.ncpu)
		if err := p.objs.Counters.Lookup(uint32(i), &vals); err != nil {
			return out, fmt.Errorf("ebpf: read counter %d: %w", i, err)
		}
		out[i] = vals
	}
	return out, nil
}

// aioInFlight returns the AIO requests submitted and not reaped, as
// records without a result, in submission order.
func (p *probes) aioInFlight() ([]aioRec, error) {
	var out []aioRec
	var k iotraceAioKey
	var v iotraceAioRec
	it := p.objs.AioInflight.Iterate()
	for it.Next(&k, &v) {
		r, err := aioRecOf(&v)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	if err := it.Err(); err != nil {
		return out, fmt.Errorf("ebpf: read the AIO in-flight map: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	return out, nil
}

// aioRecOf decodes an in-flight map value as the ring buffer's record (the
// same struct aio_rec).
func aioRecOf(v *iotraceAioRec) (aioRec, error) {
	b, err := binary.Append(nil, binary.NativeEndian, v)
	if err != nil {
		return aioRec{}, fmt.Errorf("ebpf: encode an AIO in-flight entry: %w", err)
	}
	var r aioRec
	err = r.decode(b)
	return r, err
}

// inFlight returns the syscalls entered and not exited, as records
// without a result. The in-flight state is in thread slots or task-local
// storage, which user space cannot tell apart or iterate: a task iterator
// program (dump_inflight) writes one inflight_dump per thread with a call
// in flight.
func (p *probes) inFlight() ([]syscallRec, error) {
	l, err := link.AttachIter(link.IterOptions{Program: p.objs.DumpInflight})
	if err != nil {
		return nil, fmt.Errorf("ebpf: attach the in-flight iterator: %w", err)
	}
	defer l.Close()
	rc, err := l.Open()
	if err != nil {
		return nil, fmt.Errorf("ebpf: open the in-flight iterator: %w", err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("ebpf: read the in-flight iterator: %w", err)
	}
	return parseInflight(data)
}

// parseInflight decodes the iterator's output: whole iotraceInflightDump
// records.
func parseInflight(data []byte) ([]syscallRec, error) {
	size := int(unsafe.Sizeof(iotraceInflightDump{}))
	if len(data)%size != 0 {
		return nil, fmt.Errorf("ebpf: in-flight iterator wrote %d bytes, not a multiple of %d", len(data), size)
	}
	out := make([]syscallRec, 0, len(data)/size)
	for off := 0; off < len(data); off += size {
		var d iotraceInflightDump
		if _, err := binary.Decode(data[off:off+size], binary.NativeEndian, &d); err != nil {
			return out, fmt.Errorf("ebpf: in-flight record at offset %d: %w", off, err)
		}
		v := &d.V
		out = append(out, syscallRec{
			header: header{Type: recSyscall, Kind: systable.Call(v.Kind), CPU: v.Cpu, Time: v.Ts},
			ID:     v.Id, Pid: v.Pid, Tid: d.Tid, Args: v.Args, Size: v.Size, Pos: v.Pos,
			Ino: v.Ino, Dev: v.Dev, FFlags: v.Fflags, SFlags: uint32(v.Sflags),
		})
	}
	return out, nil
}
