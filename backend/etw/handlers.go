package etw

import (
	"sort"
	"strconv"
	"strings"

	"github.com/iotrace/iotrace/backend/etw/internal/names"
	"github.com/iotrace/iotrace/backend/etw/internal/stackjoin"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/resolve"
)

// IRP flags (wdm.h) iotrace turns into event flags.
const (
	irpNocache             = 0x1
	irpPagingIO            = 0x2
	irpSynchronousAPI      = 0x4
	irpSynchronousPagingIO = 0x40
)

// irpFlags maps IRP flags (DiskIo IrpFlags, FileIo IoFlags) to event flags.
func irpFlags(f uint32) event.Flags {
	var out event.Flags
	if f&irpNocache != 0 {
		out |= event.FlagDirect
	}
	if f&irpPagingIO != 0 {
		out |= event.FlagPaging
	}
	if f&irpSynchronousPagingIO != 0 {
		out |= event.FlagPaging | event.FlagSync
	}
	if f&irpSynchronousAPI != 0 {
		out |= event.FlagSync
	}
	return out
}

// Create results in an OpEnd's ExtraInfo (FILE_SUPERSEDED .. FILE_OVERWRITTEN).
const fileCreated = 2

func providerOf(ev *kernel.Event) provider {
	if ev.Key.Class == kernel.ClassKernelFile {
		return provKernelFile
	}
	return provFileIo
}

func hasContext(r *record.Record) bool {
	return r.ThreadID != record.NoID && r.ProcessID != record.NoID
}

// issuer returns the process and thread that issued a request: the
// event's issuing thread (TTID, IssuingThreadId) when it has one, with its
// process from the header when the header is that thread's, else from the
// thread table; the header's context otherwise.
func (p *Pipeline) issuer(r *record.Record, ttid uint32, hasTTID bool, t int64) (pid, tid uint32) {
	ctx := hasContext(r)
	if hasTTID && ttid != 0 && ttid != record.NoID {
		if ctx && r.ThreadID == ttid {
			return r.ProcessID, ttid
		}
		if pid, ok := p.threadPid(ttid, t); ok {
			return pid, ttid
		}
		p.tally.Add(StatUnknownProcessOfTid, event.CountUnresolved, 1)
		if ctx {
			return r.ProcessID, ttid
		}
		return 0, ttid
	}
	if ctx {
		return r.ProcessID, r.ThreadID
	}
	p.tally.Add(StatUnknownProcessOfTid, event.CountUnresolved, 1)
	return 0, 0
}

func (p *Pipeline) onFileName(ev *kernel.Event, t int64) {
	f := &p.fact
	*f = event.Fact{Kind: event.FactName, Time: t, Space: event.SpaceFileKey, Handle: ev.FileKey,
		Name: names.NT(p.names.Str(ev.Name))}
	switch {
	case ev.Kind == kernel.KindFileRundown:
		// A rundown names its key for the whole trace unless something
		// named it earlier.
		f.Rundown = true
		p.emitFact(f)
	case ev.Kind == kernel.KindFileName && !p.boundBefore(ev.FileKey, t):
		// The kernel logs Name and FileCreate lazily, when the name is
		// first wanted, which can be just after the key's first I/O: a
		// key nothing names yet takes the name back to the trace start
		// (or to the end of its previous name).
		f.Rundown = true
		p.emitFact(f)
	case ev.Kind == kernel.KindFileNameDelete:
		// The name held until now (and, when nothing earlier named the
		// key, since the trace began); then the key goes away.
		f.Rundown = true
		p.emitFact(f)
		*f = event.Fact{Kind: event.FactName, Time: t, Space: event.SpaceFileKey, Handle: ev.FileKey, End: true}
		p.emitFact(f)
	case p.mode == modeReplay && !p.renamed.live(p.tables, ev.FileKey, t, f.Name):
		// Renamed again at this very time, or named so already: the
		// tables hold one binding from t (resolve.History), the sink
		// gets one fact.
	default:
		p.emitFact(f)
	}
}

// renames tells, in a file's second pass, the name facts of a FileKey
// that no lookup can tell from others at their time: a key renamed
// again and again within one timestamp (a crafted file: one record
// repeated) gives the sink one fact, not one per record.
type renames struct {
	t    int64               // the time of the facts in at
	at   map[uint64]struct{} // keys given a fact at t
	seen bool                // at holds the keys of t
}

// live reports whether a fact binding key to name at t changes what
// lookups find: its name is the key's at t in the complete tables, and
// no fact gave it at t already.
func (r *renames) live(tables *resolve.Tables, key uint64, t int64, name string) bool {
	if s, ok := tables.FileKeys.Lookup(key, t); !ok || s != name {
		return false
	}
	if !r.seen || r.t != t {
		if len(r.at) > 16 {
			r.at = nil // clear would walk a large map's buckets again at every time
		}
		if r.at == nil {
			r.at = make(map[uint64]struct{})
		}
		clear(r.at)
		r.t, r.seen = t, true
	}
	if _, ok := r.at[key]; ok {
		return false
	}
	r.at[key] = struct{}{}
	return true
}

// knownThread reports whether the thread table knows tid at t.
func (p *Pipeline) knownThread(tid uint32, t int64) bool {
	_, ok := p.threadPid(tid, t)
	return ok
}

// boundBefore reports whether a FileKey has a name just before t.
func (p *Pipeline) boundBefore(key uint64, t int64) bool {
	if p.mode == modeReplay {
		_, ok := p.tables.FileKeys.Lookup(key, t-1)
		return ok
	}
	_, ok := p.tables.FileKeys.Current(key)
	return ok
}

func (p *Pipeline) onFileRequest(r *record.Record, ev *kernel.Event, t int64) {
	prov := providerOf(ev)
	var name string
	if len(ev.Name) > 0 {
		name = names.NT(p.names.Str(ev.Name))
	}
	if ev.Op == event.OpOpen && ev.FileObject != 0 && name != "" {
		p.fact = event.Fact{Kind: event.FactName, Time: t, Space: event.SpaceFileObject, Handle: ev.FileObject, Name: name}
		p.emitFact(&p.fact)
	}
	if p.mode != modeCollect {
		e := &p.scratch
		*e = event.New()
		e.ID = p.newID()
		e.Source = p.opts.Source
		e.Layer = event.LayerFile
		e.Op = ev.Op
		e.Native = ev.Native
		e.Time = t
		e.CPU = uint32(r.CPU)
		e.Pid, e.Tid = p.issuer(r, ev.TTID, ev.HasTTID, t)
		e.ProcStart = p.procs.start(e.Pid, t)
		e.FileObject = ev.FileObject
		e.FileKey = ev.FileKey
		e.Request = ev.Irp
		switch ev.Op {
		case event.OpOpen:
			e.Path = p.names.DOS(name)
			e.OpenFlags = ev.CreateOptions & 0xFFFFFF
			e.Disposition = uint8(ev.CreateOptions >> 24)
			e.Mode = ev.ShareAccess
			e.Info = ev.Attributes
		case event.OpRead, event.OpWrite:
			e.Offset = int64(ev.Offset)
			e.Size = uint64(ev.Size)
			e.IOFlags = ev.IOFlags
			e.Flags |= irpFlags(ev.IOFlags)
		case event.OpReadDir, event.OpNotify:
			e.Size = uint64(ev.Size)
			e.Info = ev.InfoClass
			if name != "" {
				e.Note = "pattern " + name
			}
		case event.OpCleanup, event.OpClose, event.OpFlush:
		default:
			e.Info = ev.InfoClass
			if name != "" {
				if ev.Op == event.OpDelete {
					e.Path = p.names.DOS(name)
				} else {
					e.Path2 = p.names.DOS(name)
				}
			}
		}
		// Resolve now, before a Close unbinds the FileObject.
		p.resolveFile(e)
		if linkable(e.Op) {
			p.links.rwRequests++
		}
		if p.expectEnd[prov] {
			k := pendKey{prov: prov, irp: ev.Irp}
			if old := p.pendFile[k]; old != nil {
				old.ev.Flags |= event.FlagNoCompletion
				p.tally.Add(StatFileReplaced, event.CountUnpaired, 1)
				p.finish(old)
			}
			req := p.links.newReq()
			req.ev = *e
			p.extStack(r, &req.stk)
			if sp := p.takeStack(r, stackTid(r, ev)); sp != nil {
				req.stk = *sp
			}
			p.pendFile[k] = req
			p.links.track(req)
			p.noteTarget(r, stackTid(r, ev), targetFile, req, 0)
		} else {
			e.Flags |= event.FlagNoCompletion
			p.tally.Add(StatFileNoOpEndInTrace, event.CountInfo, 1)
			if len(r.Ext) > 0 {
				var sp stackjoin.Parts
				p.extStack(r, &sp)
				p.setStack(e, &sp)
			} else if sp := p.takeStack(r, stackTid(r, ev)); sp != nil {
				p.setStack(e, sp)
			}
			p.emitFile(e)
			p.noteTarget(r, stackTid(r, ev), targetDone, nil, 0)
		}
	}
	if ev.Op == event.OpClose && ev.FileObject != 0 {
		// The FILE_OBJECT goes away with the Close; the binding still
		// covers the Close itself (resolved above).
		p.fact = event.Fact{Kind: event.FactName, Time: t, Space: event.SpaceFileObject, Handle: ev.FileObject, End: true}
		p.emitFact(&p.fact)
	}
}

// resolveFile fills in the path of a file request from its handles.
func (p *Pipeline) resolveFile(e *event.Event) {
	if e.Path == "" && (e.FileKey != 0 || e.FileObject != 0) {
		if s, ok := p.filePath(e.FileKey, e.FileObject, e.Time); ok {
			e.Path = s
		}
	}
}

// emitFile emits a file request, counting whether it has a path.
func (p *Pipeline) emitFile(e *event.Event) {
	p.resolveFile(e) // names may have been learned since the request
	p.tally.Add(StatFileRequests, event.CountInfo, 1)
	if e.Path != "" {
		p.tally.Add(StatFileResolved, event.CountInfo, 1)
	} else if e.HasHandle() {
		p.tally.Add(StatFileUnresolved, event.CountUnresolved, 1)
	}
	p.emit(e)
}

func (p *Pipeline) onFileOpEnd(ev *kernel.Event, t int64) {
	prov := providerOf(ev)
	if p.mode == modeCollect {
		return
	}
	k := pendKey{prov: prov, irp: ev.Irp}
	r := p.pendFile[k]
	if r == nil {
		p.tally.Add(StatFileOpEndNoRequest, event.CountUnpaired, 1)
		return
	}
	delete(p.pendFile, k)
	e := &r.ev
	if d := t - e.Time; d > 0 {
		e.Duration = d
	}
	e.Code = ev.Status
	e.Status = event.FromNTSTATUS(ev.Status)
	switch e.Op {
	case event.OpRead, event.OpWrite, event.OpReadDir, event.OpNotify:
		e.Bytes = int64(ev.ExtraInfo)
	case event.OpOpen:
		if ev.ExtraInfo == fileCreated && !e.Status.Failed() {
			e.Flags |= event.FlagCreated
		}
	}
	p.finish(r)
}

func (p *Pipeline) onDiskInit(r *record.Record, ev *kernel.Event, t int64) {
	if p.mode == modeCollect {
		return
	}
	d := diskInit{t: t, cpu: uint32(r.CPU), ttid: ev.TTID, hasTTID: ev.HasTTID, op: ev.Op}
	if hasContext(r) {
		d.pid, d.tid, d.hasCtx = r.ProcessID, r.ThreadID, true
	}
	if old, dup := p.pendDisk[ev.Irp]; dup {
		p.tally.Add(StatDiskInitReplaced, event.CountUnpaired, 1)
		p.release(&old, false)
	}
	issuer := d.tid
	if d.hasTTID && d.ttid != 0 && d.ttid != record.NoID {
		issuer = d.ttid
	}
	p.links.candidates(&d, issuer, d.op)
	if sp := p.takeStack(r, stackTid(r, ev)); sp != nil {
		// takeStack's value is scratch, reused by the next event.
		c := *sp
		d.stk = &c
	}
	p.pendDisk[ev.Irp] = d
	p.noteTarget(r, stackTid(r, ev), targetDisk, nil, ev.Irp)
}

func (p *Pipeline) onDiskDone(r *record.Record, ev *kernel.Event, t int64) {
	if p.mode == modeCollect {
		return
	}
	e := &p.scratch
	*e = event.New()
	e.ID = p.newID()
	e.Source = p.opts.Source
	e.Layer = event.LayerBlock
	e.Op = ev.Op
	e.Native = ev.Native
	e.Request = ev.Irp
	resp := p.ticks(ev.ResponseTime)
	in, ok := p.pendDisk[ev.Irp]
	if ok && in.op != ev.Op {
		// The IRP's Init was for another operation whose completion
		// never came (a trimmed or lossy trace); it does not start this
		// one.
		delete(p.pendDisk, ev.Irp)
		p.tally.Add(StatDiskInitMismatch, event.CountUnpaired, 1)
		p.release(&in, false)
		ok = false
	}
	if ok {
		delete(p.pendDisk, ev.Irp)
		e.Time = in.t
		e.CPU = in.cpu
		if d := t - in.t; d > 0 {
			e.Duration = d
		}
		// The device measured its part (HighResResponseTime); the rest
		// of Init → completion was spent queued above it.
		if resp > 0 && resp <= e.Duration {
			e.Wait = e.Duration - resp
		}
		// The issuer is the IssuingThreadId (v3) — the thread the Init's
		// context shows, except for I/O started from a DPC on an idle CPU
		// (TID 0) or handed to a system worker — else the Init's context.
		ttid := uint32(0)
		if ev.HasTTID && ev.TTID != 0 {
			ttid = ev.TTID
		} else if in.hasTTID && in.ttid != 0 {
			ttid = in.ttid
		}
		switch {
		case ttid != 0 && in.hasCtx && in.tid == ttid:
			e.Pid, e.Tid = in.pid, ttid
		case ttid != 0 && p.knownThread(ttid, in.t):
			e.Pid, e.Tid = p.issuer(r, ttid, true, in.t)
		case in.hasCtx && in.tid != 0:
			e.Pid, e.Tid = in.pid, in.tid
		case ttid != 0:
			e.Pid, e.Tid = p.issuer(r, ttid, true, in.t)
		case in.hasCtx:
			e.Pid, e.Tid = in.pid, in.tid
		default:
			e.Pid, e.Tid = p.issuer(r, 0, false, in.t)
		}
	} else {
		e.Time = t - resp
		e.Duration = resp
		e.CPU = uint32(r.CPU)
		e.Flags |= event.FlagNoStart
		p.tally.Add(StatDiskNoInit, event.CountUnpaired, 1)
		if ev.HasTTID && ev.TTID != 0 {
			e.Pid, e.Tid = p.issuer(r, ev.TTID, true, e.Time)
		} else {
			// DiskIo v2 without Init: the header is the completing
			// context, the best there is; say so.
			p.tally.Add(StatDiskNoInitContext, event.CountUnresolved, 1)
			e.Pid, e.Tid = p.issuer(r, 0, false, e.Time)
		}
	}
	e.ProcStart = p.procs.start(e.Pid, e.Time)
	e.Dev = event.Device{Major: ev.Disk, IsDisk: true}
	e.IOFlags = ev.IOFlags
	e.Priority = uint8((ev.IOFlags >> 17) & 7)
	e.Flags |= irpFlags(ev.IOFlags)
	if ev.Op != event.OpBlockFlush {
		e.Offset = int64(ev.Offset)
		e.Sector = ev.Offset / 512
		e.Size = uint64(ev.Size)
		e.Bytes = int64(ev.Size)
		e.FileKey = ev.FileKey
		p.tally.Add(StatDiskIOs, event.CountInfo, 1)
		switch {
		case e.FileKey == 0:
			p.tally.Add(StatDiskNoFile, event.CountUnresolved, 1)
		default:
			if s, ok := p.filePath(e.FileKey, e.FileKey, e.Time); ok {
				e.Path = s
				p.tally.Add(StatDiskResolved, event.CountInfo, 1)
			} else {
				p.tally.Add(StatDiskUnresolved, event.CountUnresolved, 1)
			}
		}
	} else {
		// A flush names no file: counted apart from the reads and
		// writes, whose resolution StatDiskIOs totals.
		p.tally.Add(StatDiskFlushes, event.CountInfo, 1)
	}
	var sp *stackjoin.Parts
	if ok {
		sp = in.stk
	}
	p.noteTarget(r, r.ThreadID, targetDone, nil, 0)
	if ok && in.ncand > 0 {
		p.link(&in, e)
		p.emitStacked(e, sp, false)
		p.release(&in, true)
		return
	}
	p.emitStacked(e, sp, false)
}

func (p *Pipeline) onConfig(ev *kernel.Event, t int64) {
	f := &p.fact
	switch ev.Kind {
	case kernel.KindPhysicalDisk:
		*f = event.Fact{Kind: event.FactDevice, Time: t, Rundown: true,
			Dev:  event.Device{Major: ev.Disk, IsDisk: true},
			Name: strings.TrimSpace(ev.Name.String())}
		p.emitFact(f)
	case kernel.KindLogicalDisk:
		*f = event.Fact{Kind: event.FactDevice, Time: t, Rundown: true,
			Dev:    event.Device{Major: ev.Disk, Minor: ev.Partition, IsDisk: true},
			Name:   ev.Name.String(),
			Detail: "disk" + strconv.FormatUint(uint64(ev.Disk), 10)}
		p.emitFact(f)
	case kernel.KindComputer:
		if name := ev.Name.String(); name != "" && p.hdr.header.Hostname == "" && !p.hdr.begun {
			p.hdr.header.Hostname = name
		}
	case kernel.KindVolumeMapping:
		nt, dos := ev.Name.String(), ev.Name2.String()
		if nt == "" || dos == "" {
			return // "\??\" maps to nothing: handled by ntPath
		}
		*f = event.Fact{Kind: event.FactVolume, Time: t, Rundown: true, Name: nt, Image: dos}
		p.emitFact(f)
	case kernel.KindSystemPaths:
		win := strings.TrimRight(ev.Name.String(), `\`)
		if win == "" {
			return
		}
		for _, nt := range []string{`\SystemRoot`, `\Windows`} {
			*f = event.Fact{Kind: event.FactVolume, Time: t, Rundown: true, Name: nt, Image: win}
			p.emitFact(f)
		}
	}
}

// flushPending emits the requests still waiting for their OpEnd, in time
// order, counts the disk Inits still waiting for their completion, and
// emits the requests that waited for disk I/O.
func (p *Pipeline) flushPending() {
	p.flushLinks()
	if n := len(p.pendDisk); n > 0 {
		p.tally.Add(StatDiskInitPending, event.CountUnpaired, uint64(n))
		clear(p.pendDisk)
	}
	if len(p.pendFile) > 0 {
		list := make([]*fileReq, 0, len(p.pendFile))
		for _, r := range p.pendFile {
			list = append(list, r)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].ev.ID < list[j].ev.ID })
		clear(p.pendFile)
		for _, r := range list {
			r.ev.Flags |= event.FlagNoCompletion
			p.tally.Add(StatFileNoOpEnd, event.CountUnpaired, 1)
			p.finish(r)
		}
	}
	p.expire(true)
}
