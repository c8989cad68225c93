package live

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize/peid"
)

// Image identities in live sessions.
//
// The kernel's Image Load and DCStart events give an image's base, size,
// checksum and PE time stamp, not the PDB it was built with. With
// --stacks, the live backend reads each loaded image's debug directory
// from its file (symbolize/peid: the CodeView RSDS record's PDB GUID, age
// and name) and puts an iotrace OpcodeImage record (package ownprovider)
// after the Image record in the stream the pipeline decodes, with the same
// timestamp and context, so that the module gets its "pdb:" identity as
// in an .etl file recorded by iotrace.
//
// Files are read by a few worker goroutines, never on the ETW thread nor
// on the decoder's: the decoder hands each image over (bounded: beyond
// maxImageJobs pending, lookups are dropped and counted) and the workers'
// records enter the reorder window, where their timestamp puts them right
// after their image. The image is held there until its answer comes (and
// the events after it with it), for at most one more window; an identity
// that comes later still is passed on late and counted. A DLL is loaded
// by many processes (tens of thousands of Image DCStart events when a
// session starts on a desktop): an image version, told by its path, PE
// time stamp and size as the load event gives them, is read once; its
// other loads are answered from that read without touching the file
// (at once when it is done, or when it is, if it is under way).
// Reads are also cached per (path, size, modification time), for
// events that give no time stamp. A file that cannot be read (gone, access denied, not a PE), or
// whose headers differ from the loaded image's (replaced on disk since),
// gives no identity and is counted: a wrong PDB would name frames wrongly.

// ImageFile is an executable image opened for reading its headers.
type ImageFile interface {
	io.ReaderAt
	// Size is the file's size in bytes.
	Size() int64
	// ModTime is the file's last write time (any stamp that changes when
	// the file does).
	ModTime() int64
	Close() error
}

// Image identity counters.
const (
	StatImageIdentities = "etw: image identities read from the images' files (PDB GUID, age and name)"
	StatImageNoPDB      = "etw: images without a CodeView PDB record (no identity to give)"
	StatImageUnreadable = "etw: images whose file could not be read (gone, access denied, not a PE): their frames stay module+offset"
	StatImageMismatch   = "etw: images whose file on disk differs from the loaded image (PE time stamp, or size): no PDB identity given"
	StatImageDropped    = "etw: image identity lookups dropped (too many pending): their frames stay module+offset"
	StatImageUnfinished = "etw: image identity lookups not finished when the trace stopped"
	StatImageLate       = "etw: image identities read after their image had been decoded (too slow to read): the module has no PDB identity"
)

// maxImageJobs bounds the image lookups waiting for a worker.
const maxImageJobs = 4096

// imageWorkers is the number of goroutines reading image files.
const imageWorkers = 2

// imageLoad is what an Image Load or DCStart record says.
type imageLoad struct {
	base, size    uint64
	pid           uint32
	checksum      uint32
	timeDateStamp uint32
	name          string // as logged: \Device\HarddiskVolume3\Windows\System32\ntdll.dll
}

// parseImageLoad decodes an Image Load (10) or DCStart (3) record of
// version 1 to 3; ok is false for any other record or a malformed one.
func parseImageLoad(r *record.Record) (im imageLoad, ok bool) {
	if r.Provider != kernel.GUIDImage || (r.Opcode != kernel.OpcodeImageLoad && r.Opcode != kernel.OpcodeImageDCStart) {
		return im, false
	}
	p := r.PointerSize
	if p != 4 && p != 8 {
		return im, false
	}
	b := r.UserData
	ptr := func(off int) uint64 {
		if p == 8 {
			return binary.LittleEndian.Uint64(b[off:])
		}
		return uint64(binary.LittleEndian.Uint32(b[off:]))
	}
	var nameAt int
	switch r.Version {
	case 1:
		nameAt = 2*p + 4
		if len(b) < nameAt {
			return im, false
		}
	case 2, 3:
		nameAt = 2*p + 16 + p + 16
		if len(b) < nameAt {
			return im, false
		}
		im.checksum = binary.LittleEndian.Uint32(b[2*p+4:])
		im.timeDateStamp = binary.LittleEndian.Uint32(b[2*p+8:])
	default:
		return im, false
	}
	im.base, im.size = ptr(0), ptr(p)
	im.pid = binary.LittleEndian.Uint32(b[2*p:])
	var u []uint16
	for i := nameAt; i+1 < len(b); i += 2 {
		c := binary.LittleEndian.Uint16(b[i:])
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	im.name = string(utf16.Decode(u))
	return im, im.name != ""
}

// globalRoot opens an NT object-manager path from Win32.
const globalRoot = `\\?\GLOBALROOT`

// imageFilePath turns the path an Image event logs into one Win32 opens:
// a volume's device path becomes its drive letter (vols: NT device path
// → "C:"), \??\C:\ loses its prefix, and any other NT path (\SystemRoot\,
// a volume without a letter) is opened through \\?\GLOBALROOT.
func imageFilePath(nt string, vols map[string]string) string {
	if rest, ok := strings.CutPrefix(nt, `\??\`); ok {
		return rest
	}
	if !strings.HasPrefix(nt, `\`) || strings.HasPrefix(nt, `\\`) {
		return nt // already a Win32 path
	}
	for dev, dos := range vols {
		if len(nt) > len(dev) && nt[len(dev)] == '\\' && strings.EqualFold(nt[:len(dev)], dev) {
			return dos + nt[len(dev):]
		}
	}
	return globalRoot + nt
}

// imageKey is a version of an image file on disk.
type imageKey struct {
	path          string
	size, modTime int64
}

// versionKey is an image version as a load event tells it.
type versionKey struct {
	path  string // as logged
	stamp uint32 // PE TimeDateStamp
	size  uint64 // mapped size
}

// imageIdentity is the outcome of reading one image file.
type imageIdentity struct {
	id  peid.Identity
	err error
}

// imageJob is an image to identify: the record to answer with copies the
// Image record's header.
type imageJob struct {
	load imageLoad
	hdr  record.Record // Image record header (no payload)
	seq  uint64        // the Image record's arrival number in the reorderer
}

// imageAnswer is a worker's answer to the job of arrival number seq: the
// record to put after the image, or nil when there is none to give.
type imageAnswer struct {
	seq uint64
	it  *item
}

// imageResolver reads image identities off the decoder's goroutine.
type imageResolver struct {
	api   API
	vols  map[string]string
	jobs  chan imageJob
	out   chan imageAnswer // closed when the workers are done
	wg    sync.WaitGroup
	mu    sync.Mutex
	cache map[imageKey]imageIdentity
	gone  map[string]bool // paths that could not be opened
	// byVersion are the identities of the image versions read; inflight
	// the loads waiting for a read of their version under way.
	byVersion map[versionKey]imageIdentity
	inflight  map[versionKey][]imageJob
	// counters, under mu; pending are the jobs handed over and not
	// answered yet.
	read, noPDB, unreadable, mismatch, dropped, unfinished, pending, lateIDs uint64
	closed                                                                   bool // no more jobs
}

func newImageResolver(api API, vols map[string]string) *imageResolver {
	return &imageResolver{api: api, vols: vols, cache: map[imageKey]imageIdentity{}, gone: map[string]bool{},
		byVersion: map[versionKey]imageIdentity{}, inflight: map[versionKey][]imageJob{},
		jobs: make(chan imageJob, maxImageJobs), out: make(chan imageAnswer, maxImageJobs+imageWorkers)}
}

// start runs the workers.
func (ir *imageResolver) start() {
	for i := 0; i < imageWorkers; i++ {
		ir.wg.Add(1)
		go func() {
			defer ir.wg.Done()
			for j := range ir.jobs {
				for _, a := range ir.read1(&j) {
					ir.out <- a
				}
			}
		}()
	}
}

// job returns the job for Image record r, if it is an image load.
func job(r *record.Record) (imageJob, bool) {
	im, ok := parseImageLoad(r)
	if !ok {
		return imageJob{}, false
	}
	j := imageJob{load: im, hdr: *r}
	j.hdr.UserData, j.hdr.Ext = nil, nil
	return j, true
}

// version returns the version key of j, and whether the load event
// tells the version (a PE time stamp).
func (j *imageJob) version() (versionKey, bool) {
	return versionKey{path: j.load.name, stamp: j.load.timeDateStamp, size: j.load.size}, j.load.timeDateStamp != 0
}

// submit hands the Image record r (arrival number seq) to the workers, if
// it is an image load. It returns the record to put after it at once
// when its version has been read already, and reports whether an answer
// will come from the workers; it never blocks (a full queue drops the
// lookup, counted).
func (ir *imageResolver) submit(r *record.Record, seq uint64) (now *item, pending bool) {
	j, ok := job(r)
	if !ok {
		return nil, false
	}
	j.seq = seq
	key, versioned := j.version()
	ir.mu.Lock()
	defer ir.mu.Unlock()
	if ir.closed {
		ir.unfinished++
		return nil, false
	}
	if versioned {
		if res, ok := ir.byVersion[key]; ok {
			return ir.verdict(&j, res), false
		}
		if waiting, ok := ir.inflight[key]; ok {
			ir.inflight[key] = append(waiting, j)
			ir.pending++
			return nil, true
		}
	}
	select {
	case ir.jobs <- j:
		ir.pending++
		if versioned {
			ir.inflight[key] = nil
		}
		return nil, true
	default:
		ir.dropped++
		return nil, false
	}
}

// read1 reads the file of job j and answers it and the loads of its
// version that came meanwhile.
func (ir *imageResolver) read1(j *imageJob) []imageAnswer {
	res := ir.identify(imageFilePath(j.load.name, ir.vols))
	key, versioned := j.version()
	ir.mu.Lock()
	defer ir.mu.Unlock()
	jobs := []imageJob{*j}
	if versioned {
		jobs = append(jobs, ir.inflight[key]...)
		delete(ir.inflight, key)
		if res.err == nil && res.id.TimeDateStamp == key.stamp {
			ir.byVersion[key] = res // that version's identity (or its lack of a PDB)
		}
	}
	out := make([]imageAnswer, 0, len(jobs))
	for i := range jobs {
		if ir.pending > 0 { // 0: given up on (counted)
			ir.pending--
		}
		out = append(out, imageAnswer{seq: jobs[i].seq, it: ir.verdict(&jobs[i], res)})
	}
	return out
}

// lookupNow answers the Image record r on the caller's goroutine (nil: r
// is not an image load, or has no identity to give): for a stream
// without a reorder window to put the workers' answers in place.
func (ir *imageResolver) lookupNow(r *record.Record) *item {
	j, ok := job(r)
	if !ok {
		return nil
	}
	key, versioned := j.version()
	ir.mu.Lock()
	if res, ok := ir.byVersion[key]; ok && versioned {
		defer ir.mu.Unlock()
		return ir.verdict(&j, res)
	}
	ir.mu.Unlock()
	return ir.read1(&j)[0].it
}

// closeJobs stops taking jobs; ir.out is closed once the workers have
// answered the jobs already handed over.
func (ir *imageResolver) closeJobs() {
	ir.mu.Lock()
	defer ir.mu.Unlock()
	if ir.closed {
		return
	}
	ir.closed = true
	close(ir.jobs)
	go func() { ir.wg.Wait(); close(ir.out) }()
}

// giveUp counts the lookups not answered yet as unfinished.
func (ir *imageResolver) giveUp() {
	ir.mu.Lock()
	ir.unfinished += ir.pending
	ir.pending = 0
	ir.mu.Unlock()
}

// drain stops taking jobs and passes every answer still to come to fn,
// waiting at most timeout for the workers; the lookups not answered by
// then are counted.
func (ir *imageResolver) drain(timeout time.Duration, fn func(imageAnswer)) {
	ir.closeJobs()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case a, ok := <-ir.out:
			if !ok {
				return
			}
			fn(a)
		case <-deadline.C:
		late:
			for {
				select {
				case a, ok := <-ir.out:
					if !ok {
						break late
					}
					fn(a)
				default:
					break late
				}
			}
			ir.giveUp()
			return
		}
	}
}

// identify reads the identity of the image file at path (cached).
func (ir *imageResolver) identify(path string) imageIdentity {
	ir.mu.Lock()
	gone := ir.gone[path]
	ir.mu.Unlock()
	if gone {
		return imageIdentity{err: fmt.Errorf("%s: could not be opened before", path)}
	}
	f, err := ir.api.OpenImage(path)
	if err != nil {
		ir.mu.Lock()
		ir.gone[path] = true
		ir.mu.Unlock()
		return imageIdentity{err: err}
	}
	defer f.Close()
	key := imageKey{path: path, size: f.Size(), modTime: f.ModTime()}
	ir.mu.Lock()
	res, ok := ir.cache[key]
	ir.mu.Unlock()
	if ok {
		return res
	}
	res.id, res.err = peid.Read(f, key.size)
	ir.mu.Lock()
	ir.cache[key] = res
	ir.mu.Unlock()
	return res
}

// verdict returns the OpcodeImage record to put after j's image, given
// what reading its file gave, or nil (counted) when there is none to
// give. ir.mu is held.
func (ir *imageResolver) verdict(j *imageJob, res imageIdentity) *item {
	switch {
	case res.err != nil:
		ir.unreadable++
		return nil
	case j.load.timeDateStamp != 0 && res.id.TimeDateStamp != j.load.timeDateStamp,
		j.load.timeDateStamp == 0 && j.load.size != 0 && uint64(res.id.SizeOfImage) != j.load.size:
		// The time stamp (a content hash in reproducible builds) tells
		// the version; the mapped size only when the event has none (a
		// view may be rounded up to a page).
		ir.mismatch++
		return nil
	case !res.id.HasPDB:
		ir.noPDB++
		return nil
	}
	ir.read++
	im := ownprovider.Image{Base: j.load.base, Size: j.load.size, ProcessID: j.load.pid,
		TimeDateStamp: res.id.TimeDateStamp, CheckSum: res.id.CheckSum, Age: res.id.PDBAge,
		PdbGUID: record.GUIDFromBytes(res.id.PDBGUID[:]), FileName: j.load.name, PdbName: res.id.PDBName}
	it := &item{}
	it.data = im.Encode()
	it.rec = ownRecord(&j.hdr, ownprovider.OpcodeImage, it.data)
	return it
}

// ownRecord is a record of iotrace's own provider with the context of
// hdr (timestamp, thread, process, processor).
func ownRecord(hdr *record.Record, opcode uint8, payload []byte) record.Record {
	return record.Record{Kind: record.KindClassic, Provider: ownprovider.GUID, Opcode: opcode, Version: ownprovider.Version,
		Flags: eventHeaderFlagClassicHeader | eventHeaderFlag64BitHeader, PointerSize: 8,
		ThreadID: hdr.ThreadID, ProcessID: hdr.ProcessID, Timestamp: hdr.Timestamp, CPU: hdr.CPU,
		UserData: payload, FileOffset: -1, Buffer: -1}
}

// late counts an identity that came after its image had gone to the
// decoder.
func (ir *imageResolver) late() {
	ir.mu.Lock()
	ir.lateIDs++
	ir.mu.Unlock()
}

// stats adds the counters to s.
func (ir *imageResolver) stats(s *event.Stats) {
	ir.mu.Lock()
	defer ir.mu.Unlock()
	s.Add(event.CountInfo, StatImageIdentities, ir.read)
	s.Add(event.CountInfo, StatImageNoPDB, ir.noPDB)
	s.Add(event.CountUnresolved, StatImageUnreadable, ir.unreadable)
	s.Add(event.CountUnresolved, StatImageMismatch, ir.mismatch)
	s.Add(event.CountUnresolved, StatImageDropped, ir.dropped)
	s.Add(event.CountUnresolved, StatImageUnfinished, ir.unfinished)
	s.Add(event.CountUnresolved, StatImageLate, ir.lateIDs)
}
