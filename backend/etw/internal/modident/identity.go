package modident

import (
	"strings"

	"github.com/iotrace/iotrace/backend/etw/internal/names"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/symbolize"
)

// Identity is what identity records say about one image.
type Identity struct {
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

// ImageID returns what a KernelTraceControl ImageID record says.
func (m *Modules) ImageID(im *kernel.ImageIdentity) Identity {
	id := Identity{base: im.ImageBase, tds: im.TimeDateStamp, size: im.ImageSize}
	if im.HasPDB && len(im.PdbName) > 0 {
		id.hasPDB, id.guid, id.age = true, im.PdbGUID, im.Age
		id.pdbID = m.pdbID(im.PdbName, im.PdbGUID, im.Age)
	}
	return id
}

// Of returns what an identity record (ImageID, DbgID_RSDS, iotrace
// image), decoded as ev, says; the error is that of an iotrace image
// record that does not decode.
func (m *Modules) Of(r *record.Record, ev *kernel.Event) (Identity, error) {
	id := Identity{base: ev.ImageBase}
	switch ev.Kind {
	case kernel.KindImageID:
		id.tds, id.size = ev.TimeDateStamp, ev.ImageSize
	case kernel.KindImageDbgID:
		if len(ev.PdbName) > 0 {
			id.hasPDB, id.guid, id.age = true, ev.PdbGUID, ev.Age
			id.pdbID = m.pdbID(ev.PdbName, ev.PdbGUID, ev.Age)
		}
	case kernel.KindOwnImage:
		im, err := ownprovider.DecodeImage(r.UserData)
		if err != nil {
			return id, err
		}
		id = Identity{base: im.Base, tds: im.TimeDateStamp, size: im.Size, checksum: im.CheckSum, own: true, pid: im.ProcessID, name: imageName(im.FileName)}
		if im.HasPDB() {
			id.hasPDB, id.age, id.guid = true, im.Age, guidBytes(im.PdbGUID)
			if im.PdbName != "" {
				id.pdbID = m.pdbID([]byte(im.PdbName), id.guid, id.age)
			}
		}
	}
	return id, nil
}

// merge adds what src says to dst.
func (m *Modules) merge(dst, src *Identity) {
	if src.tds != 0 {
		if dst.tds != 0 && (dst.tds != src.tds || dst.size != src.size) {
			m.conflict()
		} else {
			dst.tds, dst.size = src.tds, src.size
		}
	}
	if src.hasPDB {
		if dst.hasPDB && (dst.guid != src.guid || dst.age != src.age) {
			m.conflict()
		} else {
			dst.hasPDB, dst.guid, dst.age, dst.pdbID = true, src.guid, src.age, src.pdbID
		}
	}
	if dst.checksum == 0 {
		dst.checksum = src.checksum
	}
	dst.base, dst.ts = src.base, src.ts
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
func (c *imageCheck) agrees(id *Identity) bool {
	return (c.tds == 0 || id.tds == 0 || c.tds == id.tds) &&
		(c.size == 0 || id.size == 0 || c.size == id.size) &&
		(c.name == "" || id.name == "" || c.name == id.name)
}

// imageName returns the lower-case file name of an NT or DOS path.
func imageName(path string) string { return strings.ToLower(names.Base(path)) }

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
func (m *Modules) pdbID(name []byte, guid [16]byte, age uint32) string {
	k := pdbKey{guid, age}
	if e, ok := m.pdbIDs[k]; ok && e.name == string(name) {
		return e.id
	}
	n := string(name)
	id := symbolize.PDBID(n, guid, age)
	if len(m.pdbIDs) < maxCached {
		m.pdbIDs[k] = pdbEntry{name: n, id: id}
	}
	return id
}

// maxCached bounds the PDB and PE identity strings cached.
const maxCached = 1 << 16

// peKey is the cache key of a "pe:" identity.
type peKey struct {
	tds, checksum uint32
	size          uint64
}

// peID returns the "pe:" identity of a TimeDateStamp, size and checksum,
// cached.
func (m *Modules) peID(tds uint32, size uint64, checksum uint32) string {
	k := peKey{tds: tds, checksum: checksum, size: size}
	if s, ok := m.peIDs[k]; ok {
		return s
	}
	s := formatPEID(tds, size, checksum)
	if len(m.peIDs) < maxCached {
		m.peIDs[k] = s
	}
	return s
}

// formatPEID formats a "pe:" identity: the symbol-server key (TimeDateStamp
// and SizeOfImage), then "/" and the CheckSum when it is not 0.
// It is built by hand, one allocation: fmt would box each number.
func formatPEID(tds uint32, size uint64, checksum uint32) string {
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

// guidBytes returns g in its in-memory layout.
func guidBytes(g record.GUID) [16]byte {
	var b [16]byte
	b[0], b[1], b[2], b[3] = byte(g.Data1), byte(g.Data1>>8), byte(g.Data1>>16), byte(g.Data1>>24)
	b[4], b[5] = byte(g.Data2), byte(g.Data2>>8)
	b[6], b[7] = byte(g.Data3), byte(g.Data3>>8)
	copy(b[8:], g.Data4[:])
	return b
}
