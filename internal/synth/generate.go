package synth

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/iotrace/iotrace/event"
)

// Generate delivers the trace described by opts to sink: Begin, facts and
// events in time order, End. It returns the first error of the sink, or
// an error for invalid options.
func Generate(opts Options, sink event.Sink) error {
	o, err := opts.normalized()
	if err != nil {
		return err
	}
	g := newGen(o, sink)
	return g.run()
}

// Trace returns the trace described by opts, recorded. It panics on
// invalid options (it is meant for tests and benchmarks).
func Trace(opts Options) *Recorded {
	r := NewRecorder()
	if err := Generate(opts, r); err != nil {
		panic(err)
	}
	return &r.Recorded
}

// item is an event or fact waiting for its turn in time order.
type item struct {
	t      int64
	seq    uint64
	isFact bool
	ev     event.Event
	f      event.Fact
}

type queue []*item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*item)) }
func (q *queue) Pop() any {
	old := *q
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*q = old[:n-1]
	return it
}

type gen struct {
	o    Options
	win  bool
	r    *rand.Rand
	sink event.Sink
	err  error

	q     queue
	seq   uint64
	clock int64
	end   int64

	nextID uint64
	events int
	facts  int

	procs    []*proc // every process ever seen
	workers  []*proc // live worker processes
	parent   *proc   // make / MSBuild: spawns workers
	flusher  *proc   // kworker / System: writeback
	journal  *proc   // jbd2 (Linux)
	trimmer  *proc   // fstrim (Linux)
	exited   []uint32
	nextPid  uint32
	nextTid  uint32
	files    []*file // regular files workers use
	temps    []*file // files created during the trace
	dirs     []*file
	special  []*file // unicode and long-path files, used by the tour
	pretrace []*file // Windows: files open before the trace, named only by the end rundown
	nextFO   uint64
	nextKey  uint64
	nextReq  uint64
	nextIno  uint64
	nextSect uint64
	ntemp    int
	inTour   bool // the opening tour forces features that are otherwise random

	disks []event.Device
	parts []event.Device

	lost, dropped, noCompletion, noStart, unresolved uint64
}

func newGen(o Options, sink event.Sink) *gen {
	g := &gen{
		o:    o,
		win:  o.OS == "windows",
		r:    rand.New(rand.NewPCG(o.Seed, 0x10_7ace_5e7d)),
		sink: sink,
	}
	g.nextFO = 0xffffc08a_1b2c0000
	g.nextKey = 0xffffa08a_5d6e0000
	g.nextReq = 0xffff8881_0a000000
	if g.win {
		g.nextReq = 0xffffc08a_2f000000
	}
	g.nextIno = 1_048_577
	g.nextSect = 2048
	return g
}

// left is the number of events still to generate.
func (g *gen) left() int { return g.o.Events - g.events }

func (g *gen) run() error {
	h := g.header()
	if err := g.sink.Begin(&h); err != nil {
		return err
	}
	g.setup()
	g.tour()
	for g.left() > 0 && g.err == nil {
		g.step()
	}
	g.finish()
	return g.err
}

func (g *gen) header() event.Header {
	h := event.Header{
		Source:      event.SourceSynthetic,
		OS:          g.o.OS,
		CPUs:        g.o.CPUs,
		PointerSize: 8,
		StartWall:   g.o.StartWall,
		Tool:        "iotrace synth",
		Layers:      event.LayersOf(event.LayerFile, event.LayerBlock),
	}
	if g.win {
		h.OSVersion = "10.0.26100"
		h.Hostname = "SYNTH-WIN"
		h.Clock = event.Clock{Kind: event.ClockQPC, Freq: 10_000_000, Origin: 1_234_567_890}
		h.Command = `MSBuild.exe proj.sln /m:4`
	} else {
		h.OSVersion = "6.18.0-synth"
		h.Hostname = "synth-linux"
		h.Clock = event.Clock{Kind: event.ClockBoottime, Freq: 1_000_000_000, Origin: 987_654_321_000}
		h.Command = "make -j4"
	}
	return h
}

// --- random helpers ---

func (g *gen) intn(n int) int { return g.r.IntN(n) }

func (g *gen) chance(percent int) bool { return g.r.IntN(100) < percent }

// between returns a log-uniform duration in [lo, hi] ns.
func (g *gen) between(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	v := float64(lo) * math.Exp(g.r.Float64()*math.Log(float64(hi)/float64(lo)))
	return int64(v)
}

func (g *gen) id() uint64 {
	g.nextID++
	return g.nextID
}

func (g *gen) request() uint64 {
	g.nextReq += uint64(0x100 + 0x40*g.intn(64))
	return g.nextReq
}

func (g *gen) fileObject() uint64 {
	g.nextFO += uint64(0x150 + 0x10*g.intn(32))
	return g.nextFO
}

// --- emission in time order ---

func (g *gen) push(it *item) {
	g.seq++
	it.seq = g.seq
	heap.Push(&g.q, it)
}

func (g *gen) emit(e event.Event) {
	g.events++
	if end := e.Time + e.Duration; end > g.end {
		g.end = end
	}
	g.push(&item{t: e.Time, ev: e})
}

func (g *gen) fact(f event.Fact) {
	g.facts++
	if f.Time > g.end {
		g.end = f.Time
	}
	g.push(&item{t: f.Time, isFact: true, f: f})
}

// advance moves the clock to t and delivers everything before or at it:
// nothing generated later starts earlier than the clock.
func (g *gen) advance(t int64) {
	if t > g.clock {
		g.clock = t
	}
	for g.err == nil && len(g.q) > 0 && g.q[0].t <= g.clock {
		g.deliver(heap.Pop(&g.q).(*item))
	}
}

func (g *gen) deliver(it *item) {
	if it.isFact {
		g.err = g.sink.Fact(&it.f)
	} else {
		g.err = g.sink.Event(&it.ev)
	}
}

// begin returns the start time of th's next call and advances the clock.
func (g *gen) begin(th *thread) int64 {
	t := g.clock
	if th.busy > t {
		t = th.busy
	}
	t += g.between(200, 20_000)
	g.advance(t)
	if g.chance(2) {
		th.cpu = uint32(g.intn(int(g.o.CPUs)))
	}
	return t
}

// ev returns a new event of th with the common fields set.
func (g *gen) ev(th *thread, op event.Op, native string, t int64) event.Event {
	e := event.New()
	e.ID = g.id()
	e.Source = event.SourceSynthetic
	e.Layer = op.Layer()
	e.Op = op
	e.Native = native
	e.Time = t
	e.CPU = th.cpu
	e.Pid, e.Tid, e.ProcStart = th.p.pid, th.tid, th.p.start
	if !g.win || g.o.Resolved {
		e.Comm = th.p.comm
	}
	e.Status = event.StatusOK
	if g.win && op.Layer() == event.LayerFile {
		e.Request = g.request()
	}
	return e
}

// onHandle points e at h.
func (g *gen) onHandle(e *event.Event, h *handle) {
	if g.win {
		e.FileObject = h.fo
		if h.f != nil {
			e.FileKey = h.f.key
			h.f.keyUsed = true
		}
	} else {
		e.FD = h.fd
	}
	if !h.named {
		g.unresolved++
		return
	}
	if g.o.Resolved && h.f != nil {
		e.Path = g.resolvedPath(h)
		e.Flags |= event.FlagPathLate
	}
}

// resolvedPath is the name a resolver finds for h now: on Windows the
// FileKey's name while it has one (as a DOS path), else the FileObject's;
// on Linux the fd's.
func (g *gen) resolvedPath(h *handle) string {
	if g.win && h.f.named && !h.f.deleted {
		return h.f.display()
	}
	if g.win {
		return h.dos
	}
	return h.name
}

// fail sets e's outcome to the raw code.
func (g *gen) fail(e *event.Event, code uint32) {
	e.Code = code
	if g.win {
		e.Status = event.FromNTSTATUS(code)
	} else {
		e.Status = event.FromErrno(code)
	}
	e.Bytes = -1
}

func (g *gen) done(th *thread, e *event.Event) {
	th.busy = e.Time + e.Duration
}

// --- the world ---

func (g *gen) newProc(pid, ppid uint32, start int64, comm, image, cmdline string) *proc {
	p := &proc{pid: pid, ppid: ppid, start: start, comm: comm, image: image, cmdline: cmdline, nextFD: 3}
	g.procs = append(g.procs, p)
	return p
}

func (g *gen) newThread(p *proc, tid uint32) *thread {
	th := &thread{p: p, tid: tid, cpu: uint32(g.intn(int(g.o.CPUs)))}
	p.threads = append(p.threads, th)
	return th
}

func (g *gen) tid() uint32 {
	if g.win {
		g.nextTid += 4 * uint32(1+g.intn(8))
		return g.nextTid
	}
	g.nextPid++
	return g.nextPid
}

func (g *gen) pid() uint32 {
	if g.win {
		g.nextPid += 4 * uint32(1+g.intn(40))
		return g.nextPid
	}
	g.nextPid += uint32(1 + g.intn(3))
	return g.nextPid
}

func (g *gen) newFile(path, dos string, part, disk event.Device, size int64, dir bool) *file {
	f := &file{path: path, dos: dos, dev: part, disk: disk, size: size, dir: dir}
	g.nextIno += uint64(1 + g.intn(50))
	f.inode = g.nextIno
	g.nextKey += uint64(0x200 + 0x10*g.intn(64))
	f.key = g.nextKey
	f.sector = g.nextSect
	g.nextSect += uint64(size/512) + 8 + uint64(g.intn(4096))
	return f
}

// winFile makes a Windows file from a path below C:\ or D:\ given with
// backslashes.
func (g *gen) winFile(dos string, size int64, dir bool) *file {
	vol, disk := `\Device\HarddiskVolume3`, g.disks[0]
	if strings.HasPrefix(dos, `D:`) {
		vol, disk = `\Device\HarddiskVolume4`, g.disks[1]
	}
	return g.newFile(vol+dos[2:], dos, event.Device{}, disk, size, dir)
}

func (g *gen) setup() {
	if g.win {
		g.setupWindows()
	} else {
		g.setupLinux()
	}
	for _, f := range g.files {
		if !g.win && f.inode == 0 {
			f.inode = 1
		}
	}
}

func (g *gen) rundown(f event.Fact) {
	f.Rundown = true
	g.fact(f)
}

func (g *gen) procFacts(p *proc, t int64, rundown bool) {
	f := event.Fact{Kind: event.FactProcess, Time: t, Rundown: rundown, Pid: p.pid, ProcStart: p.start,
		PPid: p.ppid, Name: p.comm, Image: p.image, Detail: p.cmdline}
	g.fact(f)
	for _, th := range p.threads {
		g.fact(event.Fact{Kind: event.FactThread, Time: t, Rundown: rundown, Pid: p.pid, ProcStart: p.start, Tid: th.tid})
	}
}

func (g *gen) setupLinux() {
	sda, sda1 := event.Device{Major: 8}, event.Device{Major: 8, Minor: 1}
	nvme, nvmep2 := event.Device{Major: 259}, event.Device{Major: 259, Minor: 2}
	g.disks = []event.Device{sda, nvme}
	g.parts = []event.Device{sda1, nvmep2}
	g.rundown(event.Fact{Kind: event.FactDevice, Dev: sda, Name: "sda"})
	g.rundown(event.Fact{Kind: event.FactDevice, Dev: sda1, Name: "sda1", Detail: "sda"})
	g.rundown(event.Fact{Kind: event.FactDevice, Dev: nvme, Name: "nvme0n1"})
	g.rundown(event.Fact{Kind: event.FactDevice, Dev: nvmep2, Name: "nvme0n1p2", Detail: "nvme0n1"})

	const proj = "/home/dev/proj"
	for _, s := range linuxSources {
		g.files = append(g.files, g.newFile(proj+"/src/"+s, "", nvmep2, nvme, int64(4096+g.intn(200_000)), false))
	}
	for _, s := range linuxHeaders {
		g.files = append(g.files, g.newFile(s, "", sda1, sda, int64(2048+g.intn(2_000_000)), false))
	}
	for _, s := range unicodeNames {
		g.special = append(g.special, g.newFile(proj+"/"+s, "", nvmep2, nvme, int64(1000+g.intn(50_000)), false))
	}
	g.special = append(g.special, g.newFile(longPath(proj, "/", 1200), "", nvmep2, nvme, 65536, false))
	for _, d := range []string{proj, proj + "/src", proj + "/build", "/usr/include"} {
		part, disk := nvmep2, nvme
		if strings.HasPrefix(d, "/usr") {
			part, disk = sda1, sda
		}
		g.dirs = append(g.dirs, g.newFile(d, "", part, disk, 4096, true))
	}

	g.nextPid = 4242
	kw := g.newProc(87, 2, -86_400_000_000_000, "kworker/u8:2", "", "")
	g.newThread(kw, 87)
	jb := g.newProc(312, 2, -86_390_000_000_000, "jbd2/nvme0n1p2-8", "", "")
	g.newThread(jb, 312)
	bash := g.newProc(1200, 1100, -3_600_000_000_000, "bash", "/usr/bin/bash", "-bash")
	g.newThread(bash, 1200)
	bash.cwd = proj
	trim := g.newProc(3001, 1, -5_000_000_000, "fstrim", "/usr/sbin/fstrim", "/sbin/fstrim -v /home")
	g.newThread(trim, 3001)
	mk := g.newProc(4242, 1200, -2_000_000_000, "make", "/usr/bin/make", "make -j4")
	g.newThread(mk, 4242)
	mk.cwd = proj
	g.flusher, g.journal, g.trimmer, g.parent = kw, jb, trim, mk
	for i := 0; i < g.o.Processes; i++ {
		p := g.newProc(g.pid(), mk.pid, -1_500_000_000+int64(i)*100_000_000, "cc1",
			"/usr/libexec/gcc/x86_64-linux-gnu/12/cc1", fmt.Sprintf("/usr/libexec/gcc/x86_64-linux-gnu/12/cc1 -quiet src/%s -O2", linuxSources[i%len(linuxSources)]))
		g.newThread(p, p.pid)
		if i%2 == 0 {
			g.newThread(p, g.tid())
		}
		p.cwd = proj
		g.workers = append(g.workers, p)
	}
	for _, p := range g.procs {
		g.procFacts(p, 0, true)
		if p.cwd != "" {
			g.rundown(event.Fact{Kind: event.FactName, Space: event.SpaceCwd, Pid: p.pid, ProcStart: p.start, Name: p.cwd})
		}
	}
	for i, p := range g.workers {
		for fd := 0; fd < 3; fd++ {
			g.rundown(event.Fact{Kind: event.FactName, Space: event.SpaceFD, Pid: p.pid, ProcStart: p.start, Handle: uint64(fd), Name: "/dev/pts/0"})
		}
		// An fd opened before the trace, named by the /proc walk.
		f := g.files[i%len(g.files)]
		h := &handle{fd: p.nextFD, f: f, named: true, name: f.path}
		p.nextFD++
		p.handles = append(p.handles, h)
		g.rundown(event.Fact{Kind: event.FactName, Space: event.SpaceFD, Pid: p.pid, ProcStart: p.start, Handle: uint64(h.fd), Name: f.path})
		// An fd the /proc walk could not name (the process closed and
		// reopened it mid-walk): events on it stay unresolved.
		p.hidden = append(p.hidden, &handle{fd: 9, f: g.files[(i+1)%len(g.files)]})
	}
}

func (g *gen) setupWindows() {
	g.disks = []event.Device{{Major: 0, IsDisk: true}, {Major: 1, IsDisk: true}}
	g.rundown(event.Fact{Kind: event.FactDevice, Dev: g.disks[0], Name: `\Device\Harddisk0\DR0`, Detail: "NVMe Samsung SSD 980"})
	g.rundown(event.Fact{Kind: event.FactDevice, Dev: g.disks[1], Name: `\Device\Harddisk1\DR1`, Detail: "ATA WDC WD40EFRX"})
	g.rundown(event.Fact{Kind: event.FactVolume, Name: `\Device\HarddiskVolume3`, Image: `C:`})
	g.rundown(event.Fact{Kind: event.FactVolume, Name: `\Device\HarddiskVolume4`, Image: `D:`})

	const proj = `D:\src\proj`
	for _, s := range linuxSources {
		g.files = append(g.files, g.winFile(proj+`\src\`+s, int64(4096+g.intn(200_000)), false))
	}
	for _, s := range []string{
		`C:\Program Files\Microsoft Visual Studio\2022\Community\VC\Tools\MSVC\14.40.33807\include\stdio.h`,
		`C:\Program Files (x86)\Windows Kits\10\Include\10.0.26100.0\ucrt\stdlib.h`,
		`C:\Program Files (x86)\Windows Kits\10\Include\10.0.26100.0\um\windows.h`,
		`C:\Windows\System32\kernel32.dll`,
		`C:\Windows\System32\ntdll.dll`,
	} {
		g.files = append(g.files, g.winFile(s, int64(2048+g.intn(2_000_000)), false))
	}
	for _, s := range unicodeNames {
		g.special = append(g.special, g.winFile(proj+`\`+strings.ReplaceAll(s, "/", `\`), int64(1000+g.intn(50_000)), false))
	}
	g.special = append(g.special, g.winFile(longPath(proj, `\`, 700), 65536, false))
	for _, d := range []string{proj, proj + `\src`, proj + `\build`, `C:\Windows\Temp`} {
		g.dirs = append(g.dirs, g.winFile(d, 4096, true))
	}

	g.nextPid, g.nextTid = 7000, 7000
	sys := g.newProc(4, 0, -86_400_000_000_000, "System", "", "")
	g.newThread(sys, 120)
	g.newThread(sys, 124)
	cmd := g.newProc(5400, 4980, -3_600_000_000_000, "cmd.exe", `C:\Windows\System32\cmd.exe`, `"C:\Windows\System32\cmd.exe"`)
	g.newThread(cmd, 5404)
	mb := g.newProc(6120, 5400, -2_000_000_000, "MSBuild.exe",
		`C:\Program Files\Microsoft Visual Studio\2022\Community\MSBuild\Current\Bin\amd64\MSBuild.exe`, `MSBuild.exe proj.sln /m:4`)
	g.newThread(mb, 6124)
	g.flusher, g.parent = sys, mb
	for i := 0; i < g.o.Processes; i++ {
		p := g.newProc(g.pid(), mb.pid, -1_500_000_000+int64(i)*100_000_000, "cl.exe",
			`C:\Program Files\Microsoft Visual Studio\2022\Community\VC\Tools\MSVC\14.40.33807\bin\Hostx64\x64\cl.exe`,
			fmt.Sprintf(`cl.exe /c /O2 src\%s`, linuxSources[i%len(linuxSources)]))
		g.newThread(p, g.tid())
		if i%2 == 0 {
			g.newThread(p, g.tid())
		}
		g.workers = append(g.workers, p)
	}
	for _, p := range g.procs {
		g.procFacts(p, 0, true)
	}
	for i, p := range g.workers {
		// A file opened before the trace: its FileObject is never named,
		// its FileKey only by the rundown at the end of the trace.
		f := g.winFile(fmt.Sprintf(`C:\Windows\Globalization\Sorting\sortdefault-%d.nls`, i), 300_000, false)
		f.named, f.keyUsed = true, true
		g.pretrace = append(g.pretrace, f)
		p.handles = append(p.handles, &handle{fo: g.fileObject(), f: f, named: true})
		// A FileObject no event or rundown ever names (a pipe).
		p.hidden = append(p.hidden, &handle{fo: g.fileObject()})
	}
}

// --- picking actors ---

func (g *gen) worker() *proc { return g.workers[g.intn(len(g.workers))] }

func (g *gen) thread(p *proc) *thread { return p.threads[g.intn(len(p.threads))] }

// regular returns a random open regular-file handle of p, or nil.
func (g *gen) regular(p *proc) *handle {
	n := 0
	for _, h := range p.handles {
		if !h.f.dir {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	k := g.intn(n)
	for _, h := range p.handles {
		if !h.f.dir {
			if k == 0 {
				return h
			}
			k--
		}
	}
	return nil
}

func (g *gen) removeHandle(p *proc, h *handle) {
	for i, x := range p.handles {
		if x == h {
			p.handles = append(p.handles[:i], p.handles[i+1:]...)
			return
		}
	}
}

// finish drains the queue, emits the end-of-trace rundown (Windows) and
// the trailer.
func (g *gen) finish() {
	if g.err != nil {
		return
	}
	end := g.end + 1_000_000
	if g.win {
		// ETW rundown at session stop names every file still known by its
		// FileKey, including files opened before the trace.
		all := append(append(append(append([]*file(nil), g.pretrace...), g.files...), g.special...), g.dirs...)
		for _, f := range append(all, g.temps...) {
			if f.keyUsed && !f.deleted {
				g.rundown(event.Fact{Kind: event.FactName, Time: end, Space: event.SpaceFileKey, Handle: f.key, Name: f.path})
			}
		}
		for _, p := range g.procs {
			if !p.exited {
				g.rundown(event.Fact{Kind: event.FactProcess, Time: end, Pid: p.pid, ProcStart: p.start,
					PPid: p.ppid, Name: p.comm, Image: p.image, Detail: p.cmdline})
			}
		}
	}
	g.advance(math.MaxInt64)
	if g.err != nil {
		return
	}
	t := event.Trailer{End: end}
	s := &t.Stats
	s.Add(event.CountInfo, "events generated", uint64(g.events))
	s.Add(event.CountInfo, "facts generated", uint64(g.facts))
	if g.win {
		s.Add(event.CountLost, "ETW events lost (session buffers full)", g.lost)
		s.Add(event.CountUnpaired, "FileIo request without OpEnd", g.noCompletion)
		s.Add(event.CountUnpaired, "DiskIo completion without issue", g.noStart)
		s.Add(event.CountUnresolved, "FileObject/FileKey without a name", g.unresolved)
	} else {
		s.Add(event.CountLost, "ring buffer full (cpu 1)", g.lost)
		s.Add(event.CountUnpaired, "syscall enter without exit", g.noCompletion)
		s.Add(event.CountUnpaired, "bio completion without queue", g.noStart)
		s.Add(event.CountUnresolved, "fd without a name", g.unresolved)
	}
	s.Add(event.CountDropped, "user-space queue full", g.dropped)
	g.err = g.sink.End(&t)
}
