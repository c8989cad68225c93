package ownprovider

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"

	"github.com/iotrace/iotrace/backend/etw/record"
)

// GUID is the provider's GUID, the class GUID of every event it writes
// (1f0e5f21-6d0b-4c1e-9a4e-696f74726365; its last bytes spell "iotrce").
var GUID = record.GUID{Data1: 0x1f0e5f21, Data2: 0x6d0b, Data3: 0x4c1e, Data4: [8]byte{0x9a, 0x4e, 0x69, 0x6f, 0x74, 0x72, 0x63, 0x65}}

// Opcodes (EVENT_TRACE_HEADER Class.Type) of the provider's events.
const (
	// OpcodeMarker is a marker: Text wstr.
	OpcodeMarker = 1
	// OpcodeVolume maps a volume's NT device path to its DOS path:
	// NtPath wstr, DosPath wstr. Written once per volume when a
	// recording starts.
	OpcodeVolume = 2
	// OpcodeImage is a loaded image's identity: ImageBase u64,
	// ImageSize u64, ProcessID u32, TimeDateStamp u32, CheckSum u32,
	// Age u32, PdbGUID [16]byte (in-memory GUID layout), FileName wstr,
	// PdbName wstr. Age 0 and a zero GUID: the image has no CodeView
	// record. Written for every image loaded when a recording starts
	// and for each image loaded during it.
	OpcodeImage = 3
)

// Version is the event version every event is written with.
const Version = 0

// Volume is an OpcodeVolume event.
type Volume struct {
	NtPath  string // \Device\HarddiskVolume3
	DosPath string // C:
}

// Image is an OpcodeImage event.
type Image struct {
	Base, Size    uint64
	ProcessID     uint32
	TimeDateStamp uint32
	CheckSum      uint32
	Age           uint32
	PdbGUID       record.GUID
	FileName      string
	PdbName       string
}

// HasPDB reports whether the image carries a CodeView PDB identity.
func (im *Image) HasPDB() bool { return im.Age != 0 || im.PdbGUID != (record.GUID{}) }

// errShort is wrapped by every decoding error of a truncated payload.
var errShort = errors.New("payload too short")

// AppendWString appends s as UTF-16LE with a terminating NUL.
func AppendWString(b []byte, s string) []byte {
	for _, c := range utf16.Encode([]rune(s)) {
		b = append(b, byte(c), byte(c>>8))
	}
	return append(b, 0, 0)
}

// wstring decodes a NUL-terminated UTF-16LE string at b[off:] and returns
// it and the offset after its NUL.
func wstring(b []byte, off int, field string) (string, int, error) {
	var u []uint16
	for i := off; i+1 < len(b); i += 2 {
		c := binary.LittleEndian.Uint16(b[i:])
		if c == 0 {
			return string(utf16.Decode(u)), i + 2, nil
		}
		u = append(u, c)
	}
	return "", 0, fmt.Errorf("field %s at offset %d: unterminated string: %w", field, off, errShort)
}

// Marker encodes a marker's payload.
func Marker(text string) []byte { return AppendWString(nil, text) }

// DecodeMarker decodes a marker's payload. A payload without its NUL
// (written by an older build) is taken whole.
func DecodeMarker(b []byte) string {
	s, _, err := wstring(b, 0, "Text")
	if err != nil {
		s, _, _ = wstring(append(b[:len(b)&^1:len(b)&^1], 0, 0), 0, "Text")
	}
	return s
}

// Encode returns v's payload.
func (v *Volume) Encode() []byte {
	return AppendWString(AppendWString(nil, v.NtPath), v.DosPath)
}

// DecodeVolume decodes an OpcodeVolume payload.
func DecodeVolume(b []byte) (Volume, error) {
	var v Volume
	var off int
	var err error
	if v.NtPath, off, err = wstring(b, 0, "NtPath"); err != nil {
		return v, fmt.Errorf("iotrace volume event: %w", err)
	}
	if v.DosPath, _, err = wstring(b, off, "DosPath"); err != nil {
		return v, fmt.Errorf("iotrace volume event: %w", err)
	}
	return v, nil
}

// imageFixed is the length of an OpcodeImage payload's fixed part.
const imageFixed = 8 + 8 + 4*4 + 16

// Encode returns im's payload.
func (im *Image) Encode() []byte {
	b := make([]byte, imageFixed, imageFixed+2*(len(im.FileName)+len(im.PdbName))+4)
	binary.LittleEndian.PutUint64(b[0:], im.Base)
	binary.LittleEndian.PutUint64(b[8:], im.Size)
	binary.LittleEndian.PutUint32(b[16:], im.ProcessID)
	binary.LittleEndian.PutUint32(b[20:], im.TimeDateStamp)
	binary.LittleEndian.PutUint32(b[24:], im.CheckSum)
	binary.LittleEndian.PutUint32(b[28:], im.Age)
	g := im.PdbGUID
	binary.LittleEndian.PutUint32(b[32:], g.Data1)
	binary.LittleEndian.PutUint16(b[36:], g.Data2)
	binary.LittleEndian.PutUint16(b[38:], g.Data3)
	copy(b[40:48], g.Data4[:])
	b = AppendWString(b, im.FileName)
	return AppendWString(b, im.PdbName)
}

// DecodeImage decodes an OpcodeImage payload.
func DecodeImage(b []byte) (Image, error) {
	var im Image
	if len(b) < imageFixed {
		return im, fmt.Errorf("iotrace image event: fixed fields need %d bytes, have %d: %w", imageFixed, len(b), errShort)
	}
	im.Base = binary.LittleEndian.Uint64(b[0:])
	im.Size = binary.LittleEndian.Uint64(b[8:])
	im.ProcessID = binary.LittleEndian.Uint32(b[16:])
	im.TimeDateStamp = binary.LittleEndian.Uint32(b[20:])
	im.CheckSum = binary.LittleEndian.Uint32(b[24:])
	im.Age = binary.LittleEndian.Uint32(b[28:])
	im.PdbGUID = record.GUIDFromBytes(b[32:48])
	var off int
	var err error
	if im.FileName, off, err = wstring(b, imageFixed, "FileName"); err != nil {
		return im, fmt.Errorf("iotrace image event: %w", err)
	}
	if im.PdbName, _, err = wstring(b, off, "PdbName"); err != nil {
		return im, fmt.Errorf("iotrace image event: %w", err)
	}
	return im, nil
}
