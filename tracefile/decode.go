package tracefile

import (
	"errors"
	"fmt"

	"github.com/iotrace/iotrace/event"
)

// maxIntern bounds the decoder's string intern table; it is cleared when
// full.
const maxIntern = 1 << 16

// decoder holds what a records chunk decodes into. Everything is reused
// from chunk to chunk: in steady state decoding does not allocate.
type decoder struct {
	// raw is the chunk's string table, views into the payload; strs[i]
	// is raw[i] interned, made when an event or fact first refers to it
	// ("" until then), so strings nobody reads are never hashed or
	// copied.
	raw    [][]byte
	strs   []string
	intern map[string]string
	fs     []factAt
	tmpls  []template
	thrs   []threadRef
	ev     event.Event

	prevID     uint64
	prevTime   int64
	prevFO     uint64
	prevKey    uint64
	prevSector uint64
	prevReq    uint64
}

// factAt is a fact and the index of the event it precedes.
type factAt struct {
	pos int
	f   event.Fact
}

// strings decodes the string table; it returns the offset of an error.
func (d *decoder) strings(p []byte) (int, error) {
	in := dec{b: p}
	n := in.uvarint()
	if n > uint64(len(p)) {
		return 0, fmt.Errorf("%d strings in %d bytes", n, len(p))
	}
	d.raw = d.raw[:0]
	for i := uint64(0); i < n; i++ {
		b := in.bytes(in.uvarint())
		if in.err != nil {
			return in.off, fmt.Errorf("string %d: %w", i, in.err)
		}
		d.raw = append(d.raw, b)
	}
	if in.left() != 0 {
		return in.off, fmt.Errorf("%d bytes left over", in.left())
	}
	if cap(d.strs) < len(d.raw) {
		d.strs = make([]string, len(d.raw), cap(d.raw))
	} else {
		d.strs = d.strs[:len(d.raw)]
		clear(d.strs)
	}
	return 0, nil
}

func (d *decoder) str(in *dec) string {
	i := in.uvarint()
	if i >= uint64(len(d.strs)) {
		if in.err == nil {
			in.fail(fmt.Errorf("string index %d out of %d", i, len(d.strs)))
		}
		return ""
	}
	if s := d.strs[i]; s != "" {
		return s
	}
	return d.makeStr(i)
}

// makeStr interns string i of the table.
func (d *decoder) makeStr(i uint64) string {
	b := d.raw[i]
	if len(b) == 0 {
		return ""
	}
	if d.intern == nil {
		d.intern = make(map[string]string)
	}
	s, ok := d.intern[string(b)]
	if !ok {
		if len(d.intern) >= maxIntern {
			clear(d.intern)
		}
		s = string(b)
		d.intern[s] = s
	}
	d.strs[i] = s
	return s
}

// facts decodes the facts section.
func (d *decoder) facts(p []byte) (int, error) {
	in := dec{b: p}
	n := in.uvarint()
	if n > uint64(len(p)) {
		return 0, fmt.Errorf("%d facts in %d bytes", n, len(p))
	}
	d.fs = d.fs[:0]
	pos, prevTime := 0, int64(0)
	for i := uint64(0); i < n; i++ {
		at := in.off
		delta := in.uvarint()
		if delta > MaxChunkSize {
			return at, fmt.Errorf("fact %d: bad position", i)
		}
		pos += int(delta)
		var f event.Fact
		f.Kind = event.FactKind(in.byte())
		m := in.uvarint()
		if m&^fAll != 0 && in.err == nil {
			return at, fmt.Errorf("fact %d: unknown field bits %#x", i, m&^fAll)
		}
		prevTime += in.varint()
		f.Time = prevTime
		f.Rundown = m&fRundown != 0
		f.End = m&fEnd != 0
		if m&fSpace != 0 {
			f.Space = event.HandleSpace(in.byte())
		}
		if m&fPid != 0 {
			f.Pid = in.u32()
		}
		if m&fProcStart != 0 {
			f.ProcStart = in.varint()
		}
		if m&fTid != 0 {
			f.Tid = in.u32()
		}
		if m&fPPid != 0 {
			f.PPid = in.u32()
		}
		if m&fHandle != 0 {
			f.Handle = in.uvarint()
		}
		if m&fDev != 0 {
			f.Dev = readDev(&in)
		}
		if m&fName != 0 {
			f.Name = d.str(&in)
		}
		if m&fImage != 0 {
			f.Image = d.str(&in)
		}
		if m&fDetail != 0 {
			f.Detail = d.str(&in)
		}
		if in.err != nil {
			return at, fmt.Errorf("fact %d: %w", i, in.err)
		}
		d.fs = append(d.fs, factAt{pos: pos, f: f})
	}
	if in.left() != 0 {
		return in.off, fmt.Errorf("%d bytes left over", in.left())
	}
	return 0, nil
}

func readDev(in *dec) event.Device {
	w := in.uvarint()
	minor := in.u32()
	if w>>1 > 1<<32-1 {
		in.fail(errors.New("device major exceeds 32 bits"))
	}
	return event.Device{Major: uint32(w >> 1), Minor: minor, IsDisk: w&1 != 0}
}

func (d *decoder) beginEvents() {
	d.tmpls = d.tmpls[:0]
	d.thrs = d.thrs[:0]
	d.prevID, d.prevTime = 0, 0
	d.prevFO, d.prevKey, d.prevSector, d.prevReq = 0, 0, 0, 0
}

var errTemplate = errors.New("bad template reference")

// event decodes one event into d.ev; errors are left in in.err.
func (d *decoder) event(in *dec) {
	ti, ok := in.u1()
	if !ok {
		ti = in.uvarintSlow()
	}
	if ti == uint64(len(d.tmpls)) && in.err == nil {
		t := template{
			source: event.Source(in.byte()),
			layer:  event.Layer(in.byte()),
			op:     event.Op(in.byte()),
			status: event.Status(in.byte()),
			flags:  event.Flags(in.u32()),
		}
		t.native = d.str(in)
		t.mask = in.uvarint()
		if t.mask&^mAll != 0 && in.err == nil {
			in.fail(fmt.Errorf("unknown field bits %#x", t.mask&^mAll))
		}
		if in.err != nil {
			return
		}
		d.tmpls = append(d.tmpls, t)
	} else if ti > uint64(len(d.tmpls)) {
		in.fail(errTemplate)
		return
	}
	t := &d.tmpls[ti]
	hi, ok := in.u1()
	if !ok {
		hi = in.uvarintSlow()
	}
	if hi == uint64(len(d.thrs)) && in.err == nil {
		h := threadRef{cpu: in.u32(), pid: in.u32(), tid: in.u32(), procStart: in.varint()}
		h.comm = d.str(in)
		if in.err != nil {
			return
		}
		d.thrs = append(d.thrs, h)
	} else if hi > uint64(len(d.thrs)) {
		in.fail(errors.New("bad thread reference"))
		return
	}
	h := &d.thrs[hi]
	m := t.mask
	e := &d.ev
	// Every field is assigned below (its value or its "none" value): no
	// need to clear the whole event first.
	e.Source, e.Layer, e.Op, e.Status, e.Flags, e.Native = t.source, t.layer, t.op, t.status, t.flags, t.native
	e.CPU, e.Pid, e.Tid, e.ProcStart, e.Comm = h.cpu, h.pid, h.tid, h.procStart, h.comm
	u, ok := in.u1()
	if !ok {
		u = in.uvarintSlow()
	}
	d.prevTime += unzigzag(u)
	e.Time = d.prevTime
	e.ID = d.prevID + 1
	if m&mID != 0 {
		e.ID += uint64(in.varint())
	}
	d.prevID = e.ID
	e.Duration, e.Wait, e.Path, e.Path2, e.FD, e.FileObject, e.FileKey, e.Inode = 0, 0, "", "", -1, 0, 0, 0
	if m&(mDuration|mWait|mPath|mPath2|mFD|mFileObject|mFileKey|mInode) != 0 {
		if m&mDuration != 0 {
			u, ok := in.u1()
			if !ok {
				u = in.uvarintSlow()
			}
			e.Duration = unzigzag(u)
		}
		if m&mWait != 0 {
			u, ok := in.u1()
			if !ok {
				u = in.uvarintSlow()
			}
			e.Wait = unzigzag(u)
		}
		if m&mPath != 0 {
			e.Path = d.str(in)
		}
		if m&mPath2 != 0 {
			e.Path2 = d.str(in)
		}
		if m&mFD != 0 {
			v := in.varint()
			if v != int64(int32(v)) {
				in.fail(errors.New("fd exceeds 32 bits"))
			}
			e.FD = int32(v)
		}
		if m&mFileObject != 0 {
			d.prevFO += uint64(in.varint())
			e.FileObject = d.prevFO
		}
		if m&mFileKey != 0 {
			d.prevKey += uint64(in.varint())
			e.FileKey = d.prevKey
		}
		if m&mInode != 0 {
			e.Inode = in.uvarint()
		}
	}
	e.Offset, e.Size, e.Bytes = -1, 0, -1
	if m&mOffset != 0 {
		u, ok := in.u1()
		if !ok {
			u = in.uvarintSlow()
		}
		e.Offset = unzigzag(u)
	}
	if m&mSize != 0 {
		u, ok := in.u1()
		if !ok {
			u = in.uvarintSlow()
		}
		e.Size = u
	}
	if m&mBytes != 0 {
		u, ok := in.u1()
		if !ok {
			u = in.uvarintSlow()
		}
		e.Bytes = unzigzag(u)
	}
	e.Code, e.OpenFlags, e.Mode, e.Disposition, e.Priority, e.IOFlags, e.Info = 0, 0, 0, 0, 0, 0, 0
	if m&(mCode|mOpenFlags|mMode|mDisposition|mPriority|mIOFlags|mInfo) != 0 {
		if m&mCode != 0 {
			e.Code = in.u32()
		}
		if m&mOpenFlags != 0 {
			e.OpenFlags = in.u32()
		}
		if m&mMode != 0 {
			e.Mode = in.u32()
		}
		if m&mDisposition != 0 {
			e.Disposition = in.byte()
		}
		if m&mPriority != 0 {
			e.Priority = in.byte()
		}
		if m&mIOFlags != 0 {
			e.IOFlags = in.u32()
		}
		if m&mInfo != 0 {
			e.Info = in.u32()
		}
	}
	e.Dev, e.Sector, e.Request, e.Cause, e.CausedIOs, e.CausedBytes, e.Note = event.Device{}, 0, 0, 0, 0, 0, ""
	if m&(mDev|mSector|mRequest|mCause|mCausedIOs|mCausedBytes|mNote) != 0 {
		if m&mDev != 0 {
			e.Dev = readDev(in)
		}
		if m&mSector != 0 {
			d.prevSector += uint64(in.varint())
			e.Sector = d.prevSector
		}
		if m&mRequest != 0 {
			d.prevReq += uint64(in.varint())
			e.Request = d.prevReq
		}
		if m&mCause != 0 {
			e.Cause = e.ID - uint64(in.varint())
		}
		if m&mCausedIOs != 0 {
			e.CausedIOs = in.u32()
		}
		if m&mCausedBytes != 0 {
			e.CausedBytes = in.uvarint()
		}
		if m&mNote != 0 {
			e.Note = d.str(in)
		}
	}
}
