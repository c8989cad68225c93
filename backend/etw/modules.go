package etw

import (
	"cmp"
	"slices"
	"strings"

	"github.com/iotrace/iotrace/backend/etw/internal/names"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
)

// Modules and their identities.
//
// Every Image event (load, unload, rundown at the start or the end of the
// session) becomes a module fact: process Pid (0 and ProcStart 0 for the
// kernel's drivers), ImageBase as Handle, ImageSize as Size, the file as
// Name (NT paths mapped to drive letters) and, from Image v2 on, the PE
// TimeDateStamp and SizeOfImage as Detail ("pe:%08X%X", the key a symbol
// server files the image under), followed by "/%08X" and the PE CheckSum
// when the image has one (Image v2+ ImageChecksum, or iotrace's own image
// record). An Unload ends the module.
//
// The identity a symbol server needs (the PDB's GUID, age and name) is not
// in Image events: traces merged by xperf, WPR or PerfView carry it in
// KernelTraceControl ImageID and DbgID_RSDS records, and traces recorded
// by iotrace in its own provider's Image events (ownprovider.Image).
//
// KernelTraceControl records are logged with the image's own timestamp,
// just before its Image event: the pipeline pairs them by ImageBase and
// timestamp. A file's first pass collects them before the merge
// (collectIdentity) and the second gives them to their images; a live
// session holds identities until their image comes.
//
// iotrace's own image records name their image by process and ImageBase
// and carry its PE TimeDateStamp, size and file name. A live session puts
// each right after its Image event (same timestamp); `record -o t.etl`
// writes them when the image's file has been read, a little after the
// load, so in the file they carry a later timestamp than their image
// (possibly after its unload). They are therefore matched by (process,
// ImageBase), whenever they come: a file's first pass collects them
// (collectOwn), and the second gives each image event the one collected
// for its process and base that agrees with it — same TimeDateStamp, size
// and file name wherever both sides have them — so that an identity of an
// earlier image at the same base never names a later one. An identity
// that disagrees with every image at its base, or whose image never
// comes, is counted.

// Counter names of module facts and identities.
const (
	StatModules          = "etw: modules (images loaded or running)"
	StatModulesPDB       = "etw: modules with their PDB identity (GUID, age, name)"
	StatModulesNoPDB     = "etw: modules without a PDB identity (the trace has no ImageID/DbgID_RSDS or iotrace image records for them): frames in them cannot be named from a PDB"
	StatIdentityNoImage  = "etw: image identity records without their image (ImageID, DbgID_RSDS, iotrace image)"
	StatRundownEndKnown  = "etw: image rundowns at trace end for modules already known (not repeated)"
	StatMarkers          = "etw: markers"
	StatOwnDecodeErrors  = "etw: iotrace provider records whose payload does not decode (skipped)"
	StatIdentityConflict = "etw: image identity records that disagree with an earlier one for the same image (first kept)"
	StatIdentityMismatch = "etw: iotrace image identity records whose image at that process and base differs (PE time stamp, size or file name): not used"
)

// modIdentity is what identity records say about one image.
type modIdentity struct {
	ts   int64 // raw timestamp of the records
	base uint64
	tds  uint32 // PE TimeDateStamp (0: unknown)
	size uint64
	// checksum is the PE CheckSum (0: unknown or none), from the image
	// event or iotrace's image record.
	checksum uint32
	hasPDB   bool
	guid     [16]byte
	age      uint32
	pdbID    string // symbolize.PDBID
	// iotrace image records: matched by process and base, checked by
	// file name (lower-case base name) besides TimeDateStamp and size.
	own  bool
	pid  uint32
	name string
}

// imageCheck is what an Image event says to check an iotrace identity
// against.
type imageCheck struct {
	tds  uint32 // 0: unknown
	size uint64 // 0: unknown
	name string // lower-case base name ("": unknown)
}

// agrees reports whether iotrace identity id may describe the image c
// describes: the TimeDateStamp, size and file name agree wherever both
// sides have them.
func (c *imageCheck) agrees(id *modIdentity) bool {
	return (c.tds == 0 || id.tds == 0 || c.tds == id.tds) &&
		(c.size == 0 || id.size == 0 || c.size == id.size) &&
		(c.name == "" || id.name == "" || c.name == id.name)
}

// imageName returns the lower-case file name of an NT or DOS path.
func imageName(path string) string { return strings.ToLower(baseName(path)) }

// ownCollected is an iotrace identity a file's first pass collected.
type ownCollected struct {
	id       modIdentity
	n        uint64 // records
	used     bool   // an image took it
	mismatch bool   // an image at its process and base disagreed with it
}

// pdbKey finds the PDB identity string of a GUID and age (cache).
type pdbKey struct {
	guid [16]byte
	age  uint32
}

type pdbEntry struct {
	name, id string
}

// pdbID returns symbolize.PDBID(name, guid, age), cached: the same
// images load in every process.
func (p *Pipeline) pdbID(name []byte, guid [16]byte, age uint32) string {
	k := pdbKey{guid, age}
	if e, ok := p.pdbIDs[k]; ok && e.name == string(name) {
		return e.id
	}
	n := string(name)
	id := symbolize.PDBID(n, guid, age)
	if len(p.pdbIDs) < 1<<16 {
		p.pdbIDs[k] = pdbEntry{name: n, id: id}
	}
	return id
}

// peKey is the cache key of a "pe:" identity.
type peKey struct {
	tds, checksum uint32
	size          uint64
}

// peID returns the "pe:" identity of a TimeDateStamp, size and checksum,
// cached.
func (p *Pipeline) peID(tds uint32, size uint64, checksum uint32) string {
	k := peKey{tds: tds, checksum: checksum, size: size}
	if s, ok := p.peIDs[k]; ok {
		return s
	}
	s := peID(tds, size, checksum)
	if len(p.peIDs) < 1<<16 {
		p.peIDs[k] = s
	}
	return s
}

// pendingModule is an image event held until its identity records have
// had their chance to arrive.
type pendingModule struct {
	ts    int64
	f     event.Fact
	id    modIdentity
	has   bool
	known bool // a rundown at the end of a module already emitted
	chk   imageCheck
}

// modKey identifies a loaded module.
type modKey struct {
	pid  uint32
	base uint64
}

// peID formats a "pe:" identity: the symbol-server key (TimeDateStamp
// and SizeOfImage), then "/" and the CheckSum when it is not 0.
// It is built by hand, one allocation: fmt would box each number.
func peID(tds uint32, size uint64, checksum uint32) string {
	var buf [len("pe:") + 8 + 16 + 1 + 8]byte
	b := appendHex(append(buf[:0], "pe:"...), uint64(tds), 8)
	b = appendHex(b, size, 0)
	if checksum != 0 {
		b = appendHex(append(b, '/'), uint64(checksum), 8)
	}
	return string(b)
}

// appendHex appends v in upper-case hex, zero-padded to width digits.
func appendHex(b []byte, v uint64, width int) []byte {
	var d [16]byte
	n := len(d)
	for {
		n--
		d[n] = "0123456789ABCDEF"[v&0xf]
		v >>= 4
		if v == 0 {
			break
		}
	}
	for i := len(d) - n; i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d[n:]...)
}

// settleModules emits the held image and counts the identities left
// without their image, once a record with a later timestamp than theirs
// arrives (ts), or at the end (force).
func (p *Pipeline) settleModules(ts int64, force bool) {
	if p.pendMod.has && (force || ts > p.pendMod.ts) {
		p.flushModule()
	}
	if len(p.idsBefore) > 0 && (force || ts > p.idsBefore[0].ts) {
		n := 0
		for _, id := range p.idsBefore {
			if force || ts > id.ts {
				p.tally.Add(StatIdentityNoImage, event.CountUnresolved, 1)
				continue
			}
			p.idsBefore[n] = id
			n++
		}
		p.idsBefore = p.idsBefore[:n]
	}
}

// flushModule emits the held image (unless it is already known).
func (p *Pipeline) flushModule() {
	if !p.pendMod.has {
		return
	}
	p.pendMod.has = false
	if !p.pendMod.known {
		p.emitModule(&p.pendMod.f, &p.pendMod.id)
	}
}

// onModule turns an Image event into a module fact, held until its
// identity records (at the same timestamp) are in.
func (p *Pipeline) onModule(r *record.Record, ev *kernel.Event, t int64) {
	if p.mode == modeCollect || ev.ImageBase == 0 {
		return
	}
	pid := ev.Pid
	if pid == 0 && ev.Key.Version == 0 && hasContext(r) {
		pid = r.ProcessID // Image v0 has no ProcessId field
	}
	k := modKey{pid: pid, base: ev.ImageBase}
	known := false
	var start int64
	if pid != 0 {
		start = p.procStart(pid, t)
	}
	switch ev.Phase {
	case kernel.PhaseEnd:
		if _, ok := p.mods[k]; ok {
			delete(p.mods, k)
			p.fact = event.Fact{Kind: event.FactModule, Time: t, Pid: pid, ProcStart: start, Handle: ev.ImageBase,
				Size: ev.ImageSize, End: true}
			p.emitFact(&p.fact)
		}
		// Merged traces log the identity of unloaded images too: they
		// are taken, not counted as orphans.
		known = true
	case kernel.PhaseDCEnd:
		if _, ok := p.mods[k]; ok {
			// Known: its identity records (if any) are taken, not
			// repeated.
			p.tally.Add(StatRundownEndKnown, event.CountInfo, 1)
			known = true
		}
	}
	p.flushModule()
	pm := &p.pendMod
	*pm = pendingModule{ts: r.Timestamp, has: true, known: known,
		chk: imageCheck{tds: ev.TimeDateStamp, size: ev.ImageSize}, id: modIdentity{checksum: ev.Checksum}}
	// The file name checks iotrace identities (none to check in a
	// file's second pass without them) and names a module not known yet.
	check := p.mode != modeReplay || len(p.own1) > 0
	var name string
	if len(ev.Name) > 0 && (check || !known) {
		name = p.names.Str(ev.Name)
		if check {
			pm.chk.name = imageName(name)
		}
	}
	f := &pm.f
	*f = event.Fact{Kind: event.FactModule, Time: t, Pid: pid, ProcStart: start, Handle: ev.ImageBase, Size: ev.ImageSize,
		Rundown: ev.Phase == kernel.PhaseDCStart || ev.Phase == kernel.PhaseDCEnd}
	if !known { // else only its identity records are taken
		if name != "" {
			f.Name = p.names.DOS(names.NT(name))
		}
		if ev.TimeDateStamp != 0 {
			f.Detail = p.peID(ev.TimeDateStamp, ev.ImageSize, ev.Checksum)
		}
	}
	if p.mode == modeReplay {
		// A file: its identity records were collected by the first
		// pass.
		if id, ok := p.takeIdentity(ev.ImageBase, r.Timestamp); ok {
			p.mergeIdentity(&pm.id, id)
		}
		p.takeOwn(k, pm)
		p.flushModule()
		if !known {
			p.mods[k] = struct{}{}
		}
		return
	}
	// Identities logged before their image (merged traces).
	n := 0
	for _, id := range p.idsBefore {
		if id.own && id.pid == pid && id.base == ev.ImageBase {
			if !pm.chk.agrees(&id) {
				p.tally.Add(StatIdentityMismatch, event.CountUnresolved, 1)
				continue
			}
			p.mergeIdentity(&pm.id, &id)
			continue
		}
		if !id.own && id.base == ev.ImageBase && id.ts == r.Timestamp {
			p.mergeIdentity(&pm.id, &id)
			continue
		}
		p.idsBefore[n] = id
		n++
	}
	p.idsBefore = p.idsBefore[:n]
	if !known {
		p.mods[k] = struct{}{}
	}
}

// mergeIdentity adds what src says to dst.
func (p *Pipeline) mergeIdentity(dst, src *modIdentity) {
	if src.tds != 0 {
		if dst.tds != 0 && (dst.tds != src.tds || dst.size != src.size) {
			p.identityConflict()
		} else {
			dst.tds, dst.size = src.tds, src.size
		}
	}
	if src.hasPDB {
		if dst.hasPDB && (dst.guid != src.guid || dst.age != src.age) {
			p.identityConflict()
		} else {
			dst.hasPDB, dst.guid, dst.age, dst.pdbID = true, src.guid, src.age, src.pdbID
		}
	}
	if dst.checksum == 0 {
		dst.checksum = src.checksum
	}
	dst.base, dst.ts = src.base, src.ts
}

// identityConflict counts two identity records of one image that
// disagree. A file's first pass counts nothing (its counters would be
// counted again by the second): its conflicts, found while it collects
// and sorts the identities, are kept apart and added when the second
// pass starts.
func (p *Pipeline) identityConflict() {
	if p.mode == modeCollect {
		p.idConflicts1++
		return
	}
	p.tally.Add(StatIdentityConflict, event.CountInfo, 1)
}

// onIdentity takes an identity record: to the held image when it is its
// own, else kept for an image at the same timestamp.
func (p *Pipeline) onIdentity(r *record.Record, id *modIdentity) {
	if p.mode == modeCollect {
		return
	}
	id.ts = r.Timestamp
	pm := &p.pendMod
	if id.own {
		// By process and base, checked against the image.
		if pm.has && pm.f.Pid == id.pid && pm.f.Handle == id.base {
			if !pm.chk.agrees(id) {
				p.tally.Add(StatIdentityMismatch, event.CountUnresolved, 1)
				return
			}
			p.mergeIdentity(&pm.id, id)
			return
		}
	} else if pm.has && pm.ts == id.ts && pm.f.Handle == id.base {
		p.mergeIdentity(&pm.id, id)
		return
	}
	for i := range p.idsBefore {
		if p.idsBefore[i].base == id.base && p.idsBefore[i].ts == id.ts && p.idsBefore[i].own == id.own && p.idsBefore[i].pid == id.pid {
			p.mergeIdentity(&p.idsBefore[i], id)
			return
		}
	}
	if len(p.idsBefore) >= maxIdsBefore {
		p.tally.Add(StatIdentityNoImage, event.CountUnresolved, 1)
		return
	}
	p.idsBefore = append(p.idsBefore, *id)
}

// maxIdsBefore bounds the identities waiting for their image.
const maxIdsBefore = 64

// emitModule completes a module fact with its identity and emits it.
func (p *Pipeline) emitModule(f *event.Fact, id *modIdentity) {
	if f.Detail == "" && id.tds != 0 {
		f.Detail = p.peID(id.tds, id.size, id.checksum)
	}
	if id.hasPDB && id.pdbID != "" {
		f.Image = id.pdbID
		p.tally.Add(StatModulesPDB, event.CountInfo, 1)
	} else {
		p.tally.Add(StatModulesNoPDB, event.CountInfo, 1)
	}
	p.tally.Add(StatModules, event.CountInfo, 1)
	p.emitFact(f)
}

// identityOf returns what an identity record (ImageID, DbgID_RSDS,
// iotrace image) says; ok is false for an iotrace image record that does
// not decode (counted).
func (p *Pipeline) identityOf(r *record.Record, ev *kernel.Event) (modIdentity, bool) {
	id := modIdentity{base: ev.ImageBase}
	switch ev.Kind {
	case kernel.KindImageID:
		id.tds, id.size = ev.TimeDateStamp, ev.ImageSize
	case kernel.KindImageDbgID:
		if len(ev.PdbName) > 0 {
			id.hasPDB, id.guid, id.age = true, ev.PdbGUID, ev.Age
			id.pdbID = p.pdbID(ev.PdbName, ev.PdbGUID, ev.Age)
		}
	case kernel.KindOwnImage:
		im, err := ownprovider.DecodeImage(r.UserData)
		if err != nil {
			if p.mode == modeCollect {
				p.taken.keepError(r, StatOwnDecodeErrors, err)
			} else {
				p.ownError(r, err)
			}
			return id, false
		}
		id = modIdentity{base: im.Base, tds: im.TimeDateStamp, size: im.Size, checksum: im.CheckSum, own: true, pid: im.ProcessID, name: imageName(im.FileName)}
		if im.HasPDB() {
			id.hasPDB, id.age, id.guid = true, im.Age, guidBytes(im.PdbGUID)
			if im.PdbName != "" {
				id.pdbID = p.pdbID([]byte(im.PdbName), id.guid, id.age)
			}
		}
	}
	return id, true
}

// onIdentityRecord handles an identity record in a live session (a
// file's first pass takes them: collectIdentity).
func (p *Pipeline) onIdentityRecord(r *record.Record, ev *kernel.Event) {
	if p.mode == modeCollect {
		return
	}
	if id, ok := p.identityOf(r, ev); ok {
		p.onIdentity(r, &id)
	}
}

// collectedID is what a file's identity records say about one image (at
// id.base, with the timestamp, raw, its image event and identity records
// share: id.ts).
type collectedID struct {
	id    modIdentity
	n     uint64 // records
	taken bool   // an image event took it
}

// collectedIDs holds the identities a file's first pass collects: in
// chunks (never copied) as they come, then, once sorted, their keys in
// order (one per image).
type collectedIDs struct {
	chunks [][]collectedID // chunk k holds up to idChunk0<<min(k, 4)
	keys   []idKey
}

// idChunk0 is the size of the first chunk of collected identities.
const idChunk0 = 256

// idKey is the sort key of a collected identity: its image's time and
// base, then where it is (chunk, offset: the order it came in).
type idKey struct {
	ts         int64
	base       uint64
	chunk, off uint32
}

func (c *collectedIDs) at(k *idKey) *collectedID { return &c.chunks[k.chunk][k.off] }

// collectIdentity keeps an identity record in a file's first pass, in any
// order: the image event at the same timestamp takes it in the second
// (sortIdentities, takeIdentity). The records of one image come one
// after the other: merged into the last one kept when they are its.
func (p *Pipeline) collectIdentity(ts int64, id *modIdentity) {
	if id.own {
		p.collectOwn(id)
		return
	}
	id.ts = ts
	c := &p.ids1
	n := len(c.chunks)
	if n > 0 {
		last := c.chunks[n-1]
		if l := &last[len(last)-1]; l.id.ts == ts && l.id.base == id.base {
			l.n++
			p.mergeIdentity(&l.id, id)
			return
		}
	}
	if n == 0 || len(c.chunks[n-1]) == cap(c.chunks[n-1]) {
		c.chunks = append(c.chunks, make([]collectedID, 0, idChunk0<<min(n, 4)))
		n++
	}
	c.chunks[n-1] = append(c.chunks[n-1], collectedID{n: 1})
	last := c.chunks[n-1]
	p.mergeIdentity(&last[len(last)-1].id, id)
}

// sortIdentities orders the identities the first pass collected by
// timestamp and base, merging those of one image in the order they came
// (as collectIdentity would have, had they come one after the other). It
// runs when the first pass ends (startReplay): like collectIdentity's,
// its conflicts are counted when the second pass starts.
func (p *Pipeline) sortIdentities() {
	c := &p.ids1
	if c.keys != nil {
		return
	}
	total := 0
	for _, chunk := range c.chunks {
		total += len(chunk)
	}
	keys := make([]idKey, 0, total)
	for k, chunk := range c.chunks {
		for i := range chunk {
			keys = append(keys, idKey{ts: chunk[i].id.ts, base: chunk[i].id.base, chunk: uint32(k), off: uint32(i)})
		}
	}
	cmpKey := func(a, b idKey) int {
		if a.ts != b.ts {
			return cmp.Compare(a.ts, b.ts)
		}
		if a.base != b.base {
			return cmp.Compare(a.base, b.base)
		}
		if a.chunk != b.chunk {
			return cmp.Compare(a.chunk, b.chunk)
		}
		return cmp.Compare(a.off, b.off)
	}
	if !slices.IsSortedFunc(keys, cmpKey) {
		slices.SortFunc(keys, cmpKey)
	}
	n := 0
	for _, k := range keys {
		if n > 0 && keys[n-1].ts == k.ts && keys[n-1].base == k.base {
			first, next := c.at(&keys[n-1]), c.at(&k)
			first.n += next.n
			p.mergeIdentity(&first.id, &next.id)
			continue
		}
		keys[n] = k
		n++
	}
	c.keys = keys[:n]
}

// takeIdentity returns the identity collected for an image event (second
// pass of a file), once.
func (p *Pipeline) takeIdentity(base uint64, ts int64) (*modIdentity, bool) {
	keys := p.ids1.keys
	lo, hi := 0, len(keys) // lo ends at the first at or after (ts, base)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k := &keys[m]; k.ts < ts || k.ts == ts && k.base < base {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(keys) || keys[lo].ts != ts || keys[lo].base != base {
		return nil, false
	}
	c := p.ids1.at(&keys[lo])
	if c.taken {
		return nil, false
	}
	c.taken = true
	return &c.id, true
}

// maxOwnPerBase bounds the distinct iotrace identities kept for one
// process and base (a process that loads many images in turn at one
// base); beyond it they are counted as without their image.
const maxOwnPerBase = 16

// collectOwn keeps an iotrace identity in a file's first pass, in any
// order: the second pass gives it to the image events of its process and
// base that agree with it (takeOwn).
func (p *Pipeline) collectOwn(id *modIdentity) {
	if p.own1 == nil {
		p.own1 = make(map[modKey][]ownCollected, 256)
	}
	k := modKey{pid: id.pid, base: id.base}
	list := p.own1[k]
	for i := range list {
		c := &list[i].id
		if c.tds == id.tds && c.size == id.size && c.checksum == id.checksum && c.name == id.name && c.hasPDB == id.hasPDB && c.guid == id.guid && c.age == id.age && c.pdbID == id.pdbID {
			list[i].n++
			return
		}
	}
	if len(list) >= maxOwnPerBase {
		p.ownDropped++
		return
	}
	p.own1[k] = append(list, ownCollected{id: *id, n: 1})
}

// takeOwn gives the image event held in pm (process and base k) the
// iotrace identities collected for k that agree with it (second pass of
// a file); those that disagree are marked, counted at the end unless
// another image takes them.
func (p *Pipeline) takeOwn(k modKey, pm *pendingModule) {
	list := p.own1[k]
	for i := range list {
		c := &list[i]
		if !pm.chk.agrees(&c.id) {
			c.mismatch = true
			continue
		}
		c.used = true
		id := c.id
		p.mergeIdentity(&pm.id, &id)
	}
}

// flushIdentities counts the collected identities no image took.
func (p *Pipeline) flushIdentities() {
	p.sortIdentities() // done by startReplay: the second pass took them
	for _, k := range p.ids1.keys {
		if c := p.ids1.at(&k); !c.taken {
			p.tally.Add(StatIdentityNoImage, event.CountUnresolved, c.n)
		}
	}
	for _, list := range p.own1 {
		for i := range list {
			switch c := &list[i]; {
			case c.used:
			case c.mismatch:
				p.tally.Add(StatIdentityMismatch, event.CountUnresolved, c.n)
			default:
				p.tally.Add(StatIdentityNoImage, event.CountUnresolved, c.n)
			}
		}
	}
	if p.ownDropped > 0 {
		p.tally.Add(StatIdentityNoImage, event.CountUnresolved, p.ownDropped)
	}
	p.ids1, p.own1, p.ownDropped = collectedIDs{}, nil, 0
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
			e.ProcStart = p.procStart(e.Pid, t)
		}
		e.Note = ownprovider.DecodeMarker(r.UserData)
		p.emit(e)
	}
}

func (p *Pipeline) ownError(r *record.Record, err error) {
	p.tally.Add(StatOwnDecodeErrors, event.CountDropped, 1)
	p.tally.Warn("etl record at file offset %#x (buffer %d): %v", r.FileOffset, r.Buffer, err)
}

// guidBytes returns g in its in-memory layout.
func guidBytes(g record.GUID) [16]byte {
	var b [16]byte
	b[0], b[1], b[2], b[3] = byte(g.Data1), byte(g.Data1>>8), byte(g.Data1>>16), byte(g.Data1>>24)
	b[4], b[5] = byte(g.Data2), byte(g.Data2>>8)
	b[6], b[7] = byte(g.Data3), byte(g.Data3>>8)
	copy(b[8:], g.Data4[:])
	return b
}
