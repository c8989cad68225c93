package kernel

import (
	"encoding/binary"

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
	ps := int(k.PtrSize)
	if ps != 4 && ps != 8 {
		ps = 8
	}
	need := ps + 4 + 16 + 4
	if len(b) < need {
		return &FieldError{Key: k, Field: "ImageBase..Age", Offset: 0, Need: need, Len: len(b)}
	}
	ev.ImageBase = readPtr(b, ps)
	ev.Pid = binary.LittleEndian.Uint32(b[ps:])
	copy(ev.PdbGUID[:], b[ps+4:ps+20])
	ev.Age = binary.LittleEndian.Uint32(b[ps+20:])
	name := b[need:]
	for i, c := range name {
		if c == 0 {
			name = name[:i]
			break
		}
	}
	ev.PdbName = AStr(name)
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
