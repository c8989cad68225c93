package etw

import (
	"sort"
	"strings"

	"github.com/iotrace/iotrace/backend/etw/internal/names"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/resolve"
)

// Processes, threads and the executables of processes.
//
// A process's name comes from its Process events (the kernel's
// ImageFileName, at most 14 characters: "SearchProtocol") and its
// executable from its main image: the full path a Kernel-Process
// ProcessStart carries, or the Image load (or image rundown) of the
// executable whose file name is the process's ImageFileName (or, for a
// name cut at 14 characters, begins with it). The process then takes the
// executable's file name without ".exe" as its name ("SearchProtocolHost")
// and the path, in DOS form, as its Image. A file is read in two passes,
// so the main image found anywhere in the trace names the process's
// events from its start; a live session names them from the image event
// on. A process that started before the trace and that no rundown names
// takes the name its end event carries, for the whole trace up to then.

// processes is what the pipeline knows of the trace's processes: when
// each pid's processes started and ended, what the last process event
// said, and their executables.
type processes struct {
	spans map[uint32]*pidSpans // by pid
	info  map[uint32]procInfo
	seen  map[uint32][]imageSeen // a file's first pass: images that may be executables (chooseImages)
	main  map[event.ProcessKey]*mainImage
}

func newProcesses() processes {
	return processes{spans: make(map[uint32]*pidSpans), info: make(map[uint32]procInfo),
		seen: make(map[uint32][]imageSeen), main: make(map[event.ProcessKey]*mainImage)}
}

// procSpan is one process of a pid: from its start (or the trace's) to
// its end (or the trace's), started at start.
type procSpan struct {
	from, to int64
	start    int64
}

// pidSpans is the processes of one pid, in time order.
type pidSpans struct {
	s []procSpan
	// unsorted: the spans are not ordered by both ends (facts out of
	// time order); start scans them.
	unsorted bool
}

// applySpan records a process fact in the start history.
func (ps *processes) applySpan(f *event.Fact) {
	p := ps.spans[f.Pid]
	if p == nil {
		p = &pidSpans{}
		ps.spans[f.Pid] = p
	}
	spans := p.s
	n := len(spans)
	switch {
	case f.End:
		if n > 0 && spans[n-1].to == resolve.Forever {
			spans[n-1].to = f.Time
		}
	case f.Rundown:
		if n == 0 {
			p.s = []procSpan{{from: resolve.Always, to: resolve.Forever, start: f.ProcStart}}
		} else if spans[n-1].to != resolve.Forever {
			p.s = append(spans, procSpan{from: spans[n-1].to, to: resolve.Forever, start: f.ProcStart})
		}
	default:
		if n > 0 && spans[n-1].to == resolve.Forever {
			spans[n-1].to = f.Time
		}
		p.s = append(spans, procSpan{from: f.Time, to: resolve.Forever, start: f.ProcStart})
	}
	if s := p.s; len(s) > 1 {
		if a, b := &s[len(s)-2], &s[len(s)-1]; a.from > b.from || a.to > b.to {
			p.unsorted = true
		}
	}
}

// start returns the start time of the process pid was at t (0 when
// it started before the trace or is unknown).
func (ps *processes) start(pid uint32, t int64) int64 {
	p := ps.spans[pid]
	if p == nil {
		return 0
	}
	spans := p.s
	if n := len(spans); n > 0 && spans[n-1].from <= t && t <= spans[n-1].to {
		return spans[n-1].start // the latest: mostly
	}
	if !p.unsorted {
		// Ordered by both ends: the last span from at or before t is
		// the one, if it lasts to t (a pid started and ended many
		// times costs a search, not a scan).
		j := sort.Search(len(spans), func(i int) bool { return spans[i].from > t })
		if j > 0 && spans[j-1].to >= t {
			return spans[j-1].start
		}
		return 0
	}
	for i := len(spans) - 1; i >= 0; i-- {
		if spans[i].from <= t && t <= spans[i].to {
			return spans[i].start
		}
	}
	return 0
}

// procInfo is what the last process event said about a pid.
type procInfo struct {
	start   int64
	ppid    uint32
	detail  string
	started bool  // a start event (not a rundown) began it
	ended   bool  // an end event ended it
	endedAt int64 // when
}

// sameEventWindow is how close two start (or end) events of one pid must
// be to describe the same process: a trace that has both the kernel
// Process events and the Kernel-Process provider's logs each process
// twice, microseconds apart.
const sameEventWindow = 10_000_000 // 10 ms

// imageSeen is an image load that may be a process's executable, kept in
// the first pass of a file until every process name is known.
type imageSeen struct {
	t  int64
	nt string
}

// maxImagesPerPid bounds the candidate executables kept per pid.
const maxImagesPerPid = 8

// mainImage is the executable of a process.
type mainImage struct {
	t    int64  // time of the event that names it
	nt   string // its path as logged (NT form)
	name string // the process name it gives: the file name without .exe
	sent bool   // a process fact with this image went to the sink
}

// ProcessName is the process name an image gives, the rule every ETW
// source uses (offline and live): the file name without ".exe",
// `C:\Windows\System32\svchost.exe` → "svchost".
func ProcessName(image string) string { return trimExe(names.Base(image)) }

// trimExe turns an image name into a process name: "svchost.exe" →
// "svchost".
func trimExe(s string) string {
	if len(s) > 4 && strings.EqualFold(s[len(s)-4:], ".exe") {
		return s[:len(s)-4]
	}
	return s
}

// imageFileNameMax is the length at which the kernel cuts a process's
// ImageFileName (EPROCESS.ImageFileName is 15 bytes with its NUL).
const imageFileNameMax = 14

// isMainImage reports whether an image file (its base name) is the
// executable of a process named name (its ImageFileName without .exe).
func isMainImage(name, base string) bool {
	if name == "" || base == "" {
		return false
	}
	if strings.EqualFold(trimExe(base), name) || strings.EqualFold(base, name) {
		return true
	}
	// A name cut at 14 characters is the start of the file name.
	return len(name) == imageFileNameMax && len(base) > len(name) && strings.EqualFold(base[:len(name)], name)
}

// libraryExts are the extensions of images that are never a process's
// executable.
var libraryExts = []string{".dll", ".sys", ".drv", ".mui", ".cpl", ".ocx", ".ime", ".tlb", ".ax", ".nls", ".winmd"}

// mayBeMain reports whether a loaded image (its file name, as logged)
// could be an executable at all; it looks at the UTF-16 bytes, so that
// the many DLL loads of a trace cost no conversion.
func mayBeMain(base kernel.WStr) bool {
	if base.Len() < 2 {
		return false
	}
	for _, ext := range libraryExts {
		if base.HasSuffixFold(ext) {
			return false
		}
	}
	return true
}

func (p *Pipeline) onProcess(ev *kernel.Event, t int64) {
	short := ev.ImageFileName.String()
	var full string
	if len(ev.Name) > 0 {
		full = names.NT(p.names.Str(ev.Name)) // Kernel-Process: the executable's path
		if short == "" {
			short = names.Base(full)
		}
	}
	f := &p.fact
	*f = event.Fact{Kind: event.FactProcess, Time: t, Pid: ev.Pid}
	pi, known := p.procs.info[ev.Pid]
	switch ev.Phase {
	case kernel.PhaseStart:
		f.ProcStart = t
		if known && pi.started && !pi.ended && t-pi.start < sameEventWindow {
			// The same start from the other provider: one process.
			f.ProcStart = pi.start
			if ev.PPid == 0 {
				ev.PPid = pi.ppid
			}
			if len(ev.Name2) == 0 && pi.detail != "" {
				f.Detail = pi.detail
			}
		}
	case kernel.PhaseEnd:
		if known && pi.ended && t-pi.endedAt < sameEventWindow {
			return // the same end from the other provider
		}
		f.ProcStart = p.procs.start(ev.Pid, t)
		if !known && short != "" {
			// Started before the trace, named by nothing so far: the end
			// names it back to the trace start.
			f.Rundown, f.Name = true, trimExe(short)
			p.emitFact(f)
			*f = event.Fact{Kind: event.FactProcess, Time: t, Pid: ev.Pid, ProcStart: f.ProcStart}
		}
		f.End = true
		p.procs.info[ev.Pid] = procInfo{start: f.ProcStart, ended: true, endedAt: t}
		p.emitFact(f)
		return
	default:
		f.Rundown = true
		f.ProcStart = p.procs.start(ev.Pid, t)
	}
	f.PPid = ev.PPid
	f.Name = trimExe(short)
	if len(ev.Name2) > 0 {
		f.Detail = ev.Name2.String()
	}
	key := event.ProcessKey{Pid: ev.Pid, Start: f.ProcStart}
	if full != "" && p.procs.main[key] == nil {
		p.procs.main[key] = &mainImage{t: t, nt: full, name: trimExe(names.Base(full))}
	}
	p.procs.info[ev.Pid] = procInfo{start: f.ProcStart, ppid: f.PPid, detail: f.Detail,
		started: ev.Phase == kernel.PhaseStart}
	if m := p.procs.main[key]; m != nil {
		f.Name, f.Image = m.name, p.names.DOS(m.nt)
		p.sentImage(m)
	}
	p.emitFact(f)
}

// sentImage marks that a fact carried m to the sink.
func (p *Pipeline) sentImage(m *mainImage) {
	if p.mode != modeCollect && !m.sent {
		m.sent = true
		p.tally.Add(StatProcessImages, event.CountInfo, 1)
		if ntForm(p.names.DOS(m.nt)) {
			p.tally.Add(StatNTPath, event.CountInfo, 1)
		}
	}
}

func (p *Pipeline) onThread(ev *kernel.Event, t int64) {
	if ev.Phase == kernel.PhaseEnd && p.mode == modeLive {
		// Before the fact: releasing held events uses p.fact.
		p.threadEnded(ev.Pid, ev.Tid)
	}
	f := &p.fact
	*f = event.Fact{Kind: event.FactThread, Time: t, Pid: ev.Pid, Tid: ev.Tid,
		ProcStart: p.procs.start(ev.Pid, t)}
	switch ev.Phase {
	case kernel.PhaseEnd:
		f.End = true
	case kernel.PhaseStart:
	default:
		f.Rundown = true
	}
	p.emitFact(f)
}

// onImage finds the executables of processes among image loads and
// rundowns (see the comment at the top of this file).
func (p *Pipeline) onImage(r *record.Record, ev *kernel.Event, t int64) {
	if ev.Phase == kernel.PhaseEnd || len(ev.Name) == 0 {
		return
	}
	pid := ev.Pid
	if pid == 0 && ev.Key.Version == 0 && hasContext(r) {
		pid = r.ProcessID // Image v0 has no ProcessId field
	}
	if pid == 0 {
		return // drivers
	}
	if !mayBeMain(ev.Name.Base()) {
		return
	}
	nt := p.names.Str(ev.Name)
	base := names.Base(nt)
	key := event.ProcessKey{Pid: pid, Start: p.procs.start(pid, t)}
	m := p.procs.main[key]
	switch p.mode {
	case modeCollect:
		// Decided once every process name is known (chooseImages).
		if m == nil && len(p.procs.seen[pid]) < maxImagesPerPid {
			p.procs.seen[pid] = append(p.procs.seen[pid], imageSeen{t: t, nt: names.NT(nt)})
		}
		return
	case modeLive:
		if m == nil {
			name, _ := p.tables.ProcessName(pid, t)
			if !isMainImage(name, base) {
				return
			}
			m = &mainImage{t: t, nt: names.NT(nt), name: trimExe(base)}
			p.procs.main[key] = m
		}
	}
	if m == nil || m.sent || m.t != t || m.nt != names.NT(nt) {
		return
	}
	pi := p.procs.info[pid]
	f := &p.fact
	*f = event.Fact{Kind: event.FactProcess, Time: t, Pid: pid, ProcStart: key.Start, PPid: pi.ppid,
		Name: m.name, Image: p.names.DOS(m.nt), Detail: pi.detail, Rundown: ev.Phase.Rundown()}
	p.sentImage(m)
	p.emitFact(f)
}

// chooseImages ends the first pass of a file: each process's executable
// is the first image whose name matches the process's name at the time.
func (p *Pipeline) chooseImages() {
	for pid, list := range p.procs.seen {
		for _, s := range list {
			key := event.ProcessKey{Pid: pid, Start: p.procs.start(pid, s.t)}
			if p.procs.main[key] != nil {
				continue
			}
			name, _ := p.tables.ProcessName(pid, s.t)
			if base := names.Base(s.nt); isMainImage(name, base) {
				p.procs.main[key] = &mainImage{t: s.t, nt: s.nt, name: trimExe(base)}
			}
		}
	}
	p.procs.seen = nil
	clear(p.procs.info)
}
