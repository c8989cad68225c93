package etw

import (
	"github.com/iotrace/iotrace/backend/etw/internal/modident"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Modules: the pipeline's side of module facts and their identities
// (package modident holds their state and its doc). Every Image event
// becomes a module fact with the identity the trace gives its image (PE
// time stamp and size, PDB GUID, age and name): from KernelTraceControl
// ImageID and DbgID_RSDS records, or from iotrace's own image records. A
// file's first pass collects the identity records (firstPass), the
// second gives them to the image events; a live session holds them
// until their image comes.

// Counter names of module facts and identities.
const (
	StatModules          = modident.StatModules
	StatModulesPDB       = modident.StatModulesPDB
	StatModulesNoPDB     = modident.StatModulesNoPDB
	StatIdentityNoImage  = modident.StatIdentityNoImage
	StatRundownEndKnown  = modident.StatRundownEndKnown
	StatIdentityConflict = modident.StatIdentityConflict
	StatIdentityMismatch = modident.StatIdentityMismatch
	StatMarkers          = "etw: markers"
	StatOwnDecodeErrors  = "etw: iotrace provider records whose payload does not decode (skipped)"
)

// onModule turns an Image event into a module fact (live sessions and a
// file's second pass).
func (p *Pipeline) onModule(r *record.Record, ev *kernel.Event, t int64) {
	if p.mode == modeCollect || ev.ImageBase == 0 {
		return
	}
	pid := ev.Pid
	if pid == 0 && ev.Key.Version == 0 && hasContext(r) {
		pid = r.ProcessID // Image v0 has no ProcessId field
	}
	var start int64
	if pid != 0 {
		start = p.procs.start(pid, t)
	}
	p.mods.Image(r.Timestamp, t, pid, start, ev)
	p.emitModules()
}

// onIdentityRecord handles an identity record in a live session (a
// file's first pass takes them).
func (p *Pipeline) onIdentityRecord(r *record.Record, ev *kernel.Event) {
	if p.mode == modeCollect {
		return
	}
	id, err := p.mods.Of(r, ev)
	if err != nil {
		p.ownError(r, err)
		return
	}
	p.mods.Identity(r.Timestamp, &id)
}

// emitModules emits the module facts the modules made.
func (p *Pipeline) emitModules() {
	out := p.mods.Facts()
	for i := range out {
		p.emitFact(&out[i])
	}
}

// onOwn handles iotrace's own provider's events.
func (p *Pipeline) onOwn(r *record.Record, ev *kernel.Event, t int64) {
	switch ev.Kind {
	case kernel.KindOwnVolume:
		v, err := ownprovider.DecodeVolume(r.UserData)
		if err != nil {
			p.ownError(r, err)
			return
		}
		if v.NtPath == "" || v.DosPath == "" {
			return
		}
		p.fact = event.Fact{Kind: event.FactVolume, Time: t, Rundown: true, Name: v.NtPath, Image: v.DosPath}
		p.emitFact(&p.fact)
	case kernel.KindOwnImage:
		p.onIdentityRecord(r, ev)
	case kernel.KindOwnMarker:
		if p.mode == modeCollect {
			return
		}
		p.tally.Add(StatMarkers, event.CountInfo, 1)
		e := &p.scratch
		*e = event.New()
		e.ID = p.newID()
		e.Source = p.opts.Source
		e.Layer = event.LayerMarker
		e.Op = event.OpMarker
		e.Native = "iotrace/mark"
		e.Time = t
		e.CPU = uint32(r.CPU)
		if hasContext(r) {
			e.Pid, e.Tid = r.ProcessID, r.ThreadID
			e.ProcStart = p.procs.start(e.Pid, t)
		}
		e.Note = ownprovider.DecodeMarker(r.UserData)
		p.emit(e)
	}
}

func (p *Pipeline) ownError(r *record.Record, err error) {
	p.tally.Add(StatOwnDecodeErrors, event.CountDropped, 1)
	p.tally.Warn("etl record at file offset %#x (buffer %d): %v", r.FileOffset, r.Buffer, err)
}
