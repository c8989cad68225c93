package kernel

import (
	"encoding/binary"

	"github.com/iotrace/iotrace/backend/etw/record"

	"github.com/iotrace/iotrace/backend/etw/ownprovider"
)

// KernelTraceControl ImageID opcodes (classic provider
// b3e675d7-2554-4f18-830b-2762732560de): the image identities xperf,
// WPR and PerfView add when they merge a kernel trace, each next to the
// image's Image (DC)Start event at the same timestamp.
const (
	OpcodeImageID          = 0
	OpcodeImageDbgIDRSDS   = 36
	OpcodeImageFileVersion = 64
)

// ImageID layouts (P is the record's pointer size):
//
//	ImageID (0):      ImageBase P, ImageSize P, ProcessID u32,
//	                  TimeDateStamp u32, OriginalFileName wstr
//	DbgID_RSDS (36):  ImageBase P, ProcessID u32, GuidSig GUID (16 bytes),
//	                  Age u32, PdbFileName NUL-terminated 8-bit string
//	FileVersion (64): version resources (not used: counted as not decoded)
var (
	imageID = []field{ptr("ImageBase", dImageBase), ptr("ImageSize", dImageSize), u32("ProcessID", dPid),
		u32("TimeDateStamp", dTimeDateStamp), wstr("OriginalFileName", dName)}
)

func decodeDbgIDRSDS(k Key, b []byte, ev *Event) error {
	var im ImageIdentity
	err := dbgIDRSDS(k, b, &im)
	ev.ImageBase, ev.Pid, ev.PdbGUID, ev.Age, ev.PdbName = im.ImageBase, im.ProcessID, im.PdbGUID, im.Age, im.PdbName
	return err
}

func dbgIDRSDS(k Key, b []byte, im *ImageIdentity) error {
	ps := int(k.PtrSize)
	if ps != 4 && ps != 8 {
		ps = 8
	}
	need := ps + 4 + 16 + 4
	if len(b) < need {
		return &FieldError{Key: k, Field: "ImageBase..Age", Offset: 0, Need: need, Len: len(b)}
	}
	im.ImageBase = readPtr(b, ps)
	im.ProcessID = binary.LittleEndian.Uint32(b[ps:])
	copy(im.PdbGUID[:], b[ps+4:ps+20])
	im.Age = binary.LittleEndian.Uint32(b[ps+20:])
	name := b[need:]
	for i, c := range name {
		if c == 0 {
			name = name[:i]
			break
		}
	}
	im.PdbName = AStr(name)
	im.HasPDB = true
	return nil
}

func addImageID(t *table) {
	t.name(ClassImageID, OpcodeImageID, "ImageID")
	t.name(ClassImageID, OpcodeImageDbgIDRSDS, "DbgID_RSDS")
	t.name(ClassImageID, OpcodeImageFileVersion, "FileVersion")
	vs := []uint16{0, 1, 2, 3}
	t.add(ClassImageID, []uint16{OpcodeImageID}, vs, spec{kind: KindImageID, fields: imageID})
	t.add(ClassImageID, []uint16{OpcodeImageDbgIDRSDS}, vs, spec{kind: KindImageDbgID, fn: decodeDbgIDRSDS})
	// FileVersion (version resources) has no decoder: the records are
	// counted as not decoded, by name, and left out before the merge.
}

// addOwn recognizes iotrace's own provider's events; their payloads are
// decoded by package ownprovider (the pipeline calls it).
func addOwn(t *table) {
	t.name(ClassOwn, ownprovider.OpcodeMarker, "Marker")
	t.name(ClassOwn, ownprovider.OpcodeVolume, "Volume")
	t.name(ClassOwn, ownprovider.OpcodeImage, "Image")
	vs := []uint16{ownprovider.Version}
	t.add(ClassOwn, []uint16{ownprovider.OpcodeMarker}, vs, spec{kind: KindOwnMarker})
	t.add(ClassOwn, []uint16{ownprovider.OpcodeVolume}, vs, spec{kind: KindOwnVolume})
	t.add(ClassOwn, []uint16{ownprovider.OpcodeImage}, vs, spec{kind: KindOwnImage})
}

// ImageIdentity is a decoded KernelTraceControl ImageID or DbgID_RSDS
// record (DecodeImageID).
type ImageIdentity struct {
	ImageBase, ImageSize uint64
	ProcessID            uint32
	TimeDateStamp        uint32 // ImageID
	HasPDB               bool   // DbgID_RSDS
	PdbGUID              [16]byte
	Age                  uint32
	PdbName              AStr // aliases the payload
}

// DecodeImageID decodes an ImageID or DbgID_RSDS record (ClassOf(r) is
// ClassImageID) without the general Event. ok is false for the other
// opcodes and unknown versions; err is a *FieldError for a payload too
// short.
func DecodeImageID(r *record.Record) (im ImageIdentity, ok bool, err error) {
	if r.Version > 3 {
		return im, false, nil
	}
	k := Key{Class: ClassImageID, Code: uint16(r.Opcode), Version: r.Version, PtrSize: uint8(r.PointerSize)}
	b := r.UserData
	ps := int(k.PtrSize)
	if ps != 4 && ps != 8 {
		ps = 8
	}
	switch r.Opcode {
	case OpcodeImageID:
		need := 2*ps + 8
		if len(b) < need {
			return im, true, &FieldError{Key: k, Field: "ImageBase..TimeDateStamp", Offset: 0, Need: need, Len: len(b)}
		}
		im.ImageBase, im.ImageSize = readPtr(b, ps), readPtr(b[ps:], ps)
		im.ProcessID = binary.LittleEndian.Uint32(b[2*ps:])
		im.TimeDateStamp = binary.LittleEndian.Uint32(b[2*ps+4:])
		return im, true, nil
	case OpcodeImageDbgIDRSDS:
		err := dbgIDRSDS(k, b, &im)
		return im, true, err
	}
	return im, false, nil
}
