package kernel

import (
	"fmt"
	"strconv"

	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// Class is an event family: a kernel event group (FileIo, DiskIo, ...) or a
// provider iotrace decodes. Kernel events logged with a kernel header carry
// their group; classic (MOF) events carry the group's class GUID; manifest
// events carry their provider GUID. All three map to one Class.
type Class uint8

// Classes.
const (
	ClassUnknown       Class = iota
	ClassEventTrace          // kernel group 0: trace header, extension, rundown complete
	ClassDiskIo              // kernel group 1
	ClassProcess             // kernel group 3
	ClassFileIo              // kernel group 4
	ClassThread              // kernel group 5
	ClassSystemConfig        // kernel group 0x0B (hardware configuration rundown)
	ClassImage               // kernel group 0x14
	ClassSysConfig           // KernelTraceControl SysConfig (volume mapping, system paths)
	ClassKernelFile          // Microsoft-Windows-Kernel-File manifest provider
	ClassKernelProcess       // Microsoft-Windows-Kernel-Process manifest provider
	ClassStackWalk           // kernel group 0x18: stack walks
	ClassImageID             // KernelTraceControl ImageID: image identities of merged traces
	ClassOwn                 // iotrace's own provider (package ownprovider)
	numClasses
)

var classNames = [...]string{"unknown", "EventTrace", "DiskIo", "Process", "FileIo", "Thread",
	"SystemConfig", "Image", "SysConfig", "Kernel-File", "Kernel-Process", "StackWalk", "ImageID", "iotrace"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Provider and class GUIDs of the classes iotrace decodes.
var (
	GUIDEventTrace   = mustGUID("68fdd900-4a3e-11d1-84f4-0000f80464e3")
	GUIDDiskIo       = mustGUID("3d6fa8d4-fe05-11d0-9dda-00c04fd7ba7c")
	GUIDProcess      = mustGUID("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c")
	GUIDFileIo       = mustGUID("90cbdc39-4a3e-11d1-84f4-0000f80464e3")
	GUIDThread       = mustGUID("3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c")
	GUIDSystemConfig = mustGUID("01853a65-418f-4f36-aefc-dc0f1d2fd235")
	GUIDImage        = mustGUID("2cb15d1d-5fc1-11d2-abe1-00a0c911f518")
	GUIDSysConfig    = mustGUID("9b79ee91-b5fd-41c0-a243-4248e266e9d0")
	GUIDKernelFile   = mustGUID("edd08927-9cc4-4e65-b970-c2560fb5c289")
	GUIDKernelProc   = mustGUID("22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716")
	GUIDStackWalk    = mustGUID("def2fe46-7bd6-4b80-bd94-f57fe20d0ce3")
	GUIDImageID      = mustGUID("b3e675d7-2554-4f18-830b-2762732560de")
)

// classGUID is the GUID of each class: the classic (MOF) GUID of a kernel
// group, the provider GUID of a manifest provider.
var classGUID = [numClasses]record.GUID{
	ClassEventTrace: GUIDEventTrace, ClassDiskIo: GUIDDiskIo, ClassProcess: GUIDProcess,
	ClassFileIo: GUIDFileIo, ClassThread: GUIDThread, ClassSystemConfig: GUIDSystemConfig,
	ClassImage: GUIDImage, ClassSysConfig: GUIDSysConfig, ClassKernelFile: GUIDKernelFile,
	ClassKernelProcess: GUIDKernelProc, ClassStackWalk: GUIDStackWalk, ClassImageID: GUIDImageID,
	ClassOwn: ownprovider.GUID,
}

// groupClass maps a kernel event group to its class.
var groupClass = [256]Class{
	record.GroupEventTrace:   ClassEventTrace,
	record.GroupDiskIo:       ClassDiskIo,
	record.GroupProcess:      ClassProcess,
	record.GroupFileIo:       ClassFileIo,
	record.GroupThread:       ClassThread,
	record.GroupSystemConfig: ClassSystemConfig,
	record.GroupImage:        ClassImage,
	record.GroupStackWalk:    ClassStackWalk,
}

// ClassOf returns the class of r: by kernel group for records with a
// kernel header, by GUID otherwise (the first 32 bits of the GUIDs differ,
// so they find the class, classByData1, and one comparison settles it).
func ClassOf(r *record.Record) Class {
	switch r.Kind {
	case record.KindSystem, record.KindCompact, record.KindPerfInfo:
		return groupClass[r.Group]
	}
	g := &r.Provider
	for i := classSlot(g.Data1); ; i = (i + 1) % uint32(len(classByData1)) {
		e := classByData1[i]
		if e.c == ClassUnknown {
			return ClassUnknown // an empty slot: no class has that Data1
		}
		if e.d1 == g.Data1 {
			if classGUID[e.c] == *g {
				return e.c
			}
			return ClassUnknown
		}
	}
}

// classByData1 finds a class by the first 32 bits of its GUID (open
// addressing, linear probing; an empty slot has ClassUnknown): most
// records of other providers (the CLR's, in traces merged by PerfView)
// then cost one probe, not one comparison per class. Built once, by
// init, and only read after.
var classByData1 [32]struct {
	d1 uint32
	c  Class
}

// classSlot is the first slot of Data1 d1 in classByData1.
func classSlot(d1 uint32) uint32 { return d1 * 0x9E3779B1 >> 27 }

func init() {
	for c := ClassEventTrace; c < numClasses; c++ {
		d1 := classGUID[c].Data1
		i := classSlot(d1)
		for classByData1[i].c != ClassUnknown {
			i = (i + 1) % uint32(len(classByData1))
		}
		classByData1[i].d1, classByData1[i].c = d1, c
	}
}

// Key selects a decoder: the class, the opcode (kernel and classic events)
// or event id (manifest events), the event version and the pointer size of
// the payload (4 or 8).
type Key struct {
	Class   Class
	Code    uint16
	Version uint16
	PtrSize uint8
}

// pack returns k as one integer (a cheap map key).
func (k Key) pack() uint64 {
	return uint64(k.Class)<<40 | uint64(k.Code)<<24 | uint64(k.Version)<<8 | uint64(k.PtrSize)
}

// KeyOf returns the decoder key of r.
func KeyOf(r *record.Record) Key {
	k := Key{Class: ClassOf(r), Version: r.Version, PtrSize: uint8(r.PointerSize)}
	if r.Kind == record.KindEvent {
		k.Code = r.ID
	} else {
		k.Code = uint16(r.Opcode)
	}
	return k
}

func (k Key) String() string {
	arch := "x64"
	if k.PtrSize == 4 {
		arch = "x86"
	}
	return fmt.Sprintf("%s/%s v%d %s", k.Class, codeName(k.Class, k.Code), k.Version, arch)
}

// Kind says what a decoded event means.
type Kind uint8

// Kinds of decoded events.
const (
	KindNone           Kind = iota
	KindTraceHeader         // EventTrace header: the TRACE_LOGFILE_HEADER (Header is set)
	KindFileName            // a FileKey → name binding (FileIo Name/FileCreate, Kernel-File NameCreate)
	KindFileNameDelete      // a FileKey whose file control block goes away (FileIo FileDelete, Kernel-File NameDelete)
	KindFileRundown         // a FileKey → name binding from the end-of-trace rundown
	KindFileRequest         // a file-system request (FileIo Create..DirNotify, Kernel-File)
	KindFileOpEnd           // the end of a file-system request (FileIo OpEnd, Kernel-File OperationEnd)
	KindDiskInit            // a disk I/O issued (ReadInit, WriteInit, FlushInit)
	KindDiskDone            // a disk I/O completed (Read, Write, FlushBuffers)
	KindProcess             // a process start, end or rundown
	KindThread              // a thread start, end or rundown
	KindImage               // an image load, unload or rundown
	KindPhysicalDisk        // SystemConfig PhyDisk
	KindLogicalDisk         // SystemConfig LogDisk
	KindComputer            // SystemConfig CPU (computer name, processors)
	KindVolumeMapping       // SysConfig VolumeMapping: NT device path → DOS path
	KindSystemPaths         // SysConfig SystemPaths: the Windows directory
	KindIgnored             // a known event that carries nothing iotrace uses
	KindStack               // StackWalk Stack: an event's stack (StackTime, Pid, Tid, Frames)
	KindStackKeyRef         // StackWalk StackKeyKernel/StackKeyUser: an event's stack by cache key
	KindStackKeyDef         // StackWalk KeyCreate/KeyDelete/KeyRundown: a cache key's frames
	KindImageID             // KernelTraceControl ImageID: an image's PE TimeDateStamp and size
	KindImageDbgID          // KernelTraceControl DbgID_RSDS: an image's PDB GUID, age and name
	KindOwnMarker           // iotrace provider marker (payload: ownprovider.DecodeMarker)
	KindOwnVolume           // iotrace provider volume map (payload: ownprovider.DecodeVolume)
	KindOwnImage            // iotrace provider image identity (payload: ownprovider.DecodeImage)
)

// Phase says whether a process, thread or image event starts or ends its
// object, and whether it comes from a rundown.
type Phase uint8

// Phases.
const (
	PhaseNone    Phase = iota
	PhaseStart         // Start, Load
	PhaseEnd           // End, Unload
	PhaseDCStart       // rundown at the start of the trace
	PhaseDCEnd         // rundown at the end of the trace
	PhaseDefunct       // a process that has exited but not yet gone
)

// Rundown reports whether p is a rundown (a snapshot of state).
func (p Phase) Rundown() bool { return p == PhaseDCStart || p == PhaseDCEnd || p == PhaseDefunct }

// Event is one decoded event payload. Which fields are set depends on Kind;
// the rest are zero. Strings ([WStr], [AStr]) alias the record's payload
// and are valid only as long as the record is.
type Event struct {
	Kind Kind
	Key  Key
	// Native is the event's name: "FileIo/Read", "DiskIo/ReadInit".
	Native string
	// Op is the normalized operation of file requests and disk I/O.
	Op event.Op
	// Phase of process, thread and image events.
	Phase Phase

	// Irp is the I/O request packet: the pairing key of requests and
	// their ends, of disk Inits and their completions.
	Irp uint64
	// FileObject is the per-open FILE_OBJECT address.
	FileObject uint64
	// FileKey is the per-file key (the FILE_OBJECT's FsContext); DiskIo's
	// "FileObject" field is a FileKey and is decoded here.
	FileKey uint64
	// TTID is the issuing thread (FileIo TTID, DiskIo IssuingThreadId,
	// Kernel-File IssuingThreadId); HasTTID says whether the layout has one.
	TTID    uint32
	HasTTID bool

	// Offset is the file offset (FileIo Read/Write) or the disk byte
	// offset (DiskIo Read/Write).
	Offset uint64
	// Size is IoSize, TransferSize or a DirEnum's Length.
	Size uint32
	// IOFlags are FileIo IoFlags or DiskIo IrpFlags.
	IOFlags uint32
	// InfoClass is the FILE_INFORMATION_CLASS or FS control code.
	InfoClass uint32
	// FileIndex of a DirEnum.
	FileIndex uint32
	// ExtraInfo is op specific (OpEnd: bytes transferred or the create
	// result; SetInfo: the information's first word).
	ExtraInfo uint64
	// CreateOptions (with the disposition in the top byte), FileAttributes
	// and ShareAccess of a Create.
	CreateOptions, Attributes, ShareAccess uint32
	// Status is the NTSTATUS of an OpEnd.
	Status uint32

	// Disk is the disk number of DiskIo, PhyDisk and LogDisk events.
	Disk uint32
	// Partition is the partition number of a LogDisk event.
	Partition uint32
	// ResponseTime is DiskIo's HighResResponseTime in QPC ticks.
	ResponseTime uint64

	// Pid, PPid, SessionID and ExitStatus of process events; Pid and Tid
	// of thread events; Pid of image events.
	Pid, PPid, Tid uint32
	SessionID      uint32
	ExitStatus     uint32
	// ImageBase and ImageSize of image and image identity events;
	// Checksum and TimeDateStamp (PE header) of Image v2+ and ImageID.
	ImageBase, ImageSize    uint64
	Checksum, TimeDateStamp uint32
	// PdbGUID (in-memory GUID layout), Age and PdbName (ANSI) of a
	// DbgID_RSDS.
	PdbGUID [16]byte
	Age     uint32
	PdbName AStr

	// StackTime is the timestamp (raw clock) of the event a stack
	// belongs to; Pid and Tid its process and thread. Frames are the
	// return addresses (pointer size each, innermost first) of a Stack
	// or a key definition; StackKey is the cache key of a key reference
	// or definition.
	StackTime int64
	StackKey  uint64
	Frames    Frames
	// Processors and MHz of a SystemConfig CPU event.
	Processors, MHz uint32

	// Name is the file name of name events, the OpenPath of a Create, the
	// pattern of a DirEnum, the path of a path operation, the file name of
	// an image, the image path of a Kernel-Process ProcessStart, the manufacturer of a disk, the drive letter of a logical
	// disk, the computer name, the NT path of a volume mapping, the
	// Windows directory.
	Name WStr
	// Name2 is the command line of a process, the DOS path of a volume
	// mapping, the file system of a logical disk.
	Name2 WStr
	// ImageFileName is the ANSI image name of a process ("svchost.exe").
	ImageFileName AStr

	// Header is set for KindTraceHeader.
	Header *LogfileHeader
}

// Reset clears e for reuse.
func (e *Event) Reset() { *e = Event{} }

// FieldError reports a payload too short for a field.
type FieldError struct {
	Key    Key
	Field  string
	Offset int // offset of the field in the payload
	Need   int // bytes the field needs (0 for a string with no terminator)
	Len    int // payload length
}

func (e *FieldError) Error() string {
	if e.Need == 0 {
		return fmt.Sprintf("%s: field %s at payload offset %d: beyond the %d-byte payload", e.Key, e.Field, e.Offset, e.Len)
	}
	return fmt.Sprintf("%s: field %s at payload offset %d needs %d bytes, the payload has %d", e.Key, e.Field, e.Offset, e.Need, e.Len)
}

func mustGUID(s string) record.GUID {
	g, err := ParseGUID(s)
	if err != nil {
		panic(err)
	}
	return g
}

// ParseGUID parses "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", with or without
// braces.
func ParseGUID(s string) (record.GUID, error) {
	if len(s) == 38 && s[0] == '{' && s[37] == '}' {
		s = s[1:37]
	}
	var g record.GUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, fmt.Errorf("parse GUID %q: want the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
	}
	hex := func(from, to int) (uint64, error) {
		return strconv.ParseUint(s[from:to], 16, 64)
	}
	d1, err1 := hex(0, 8)
	d2, err2 := hex(9, 13)
	d3, err3 := hex(14, 18)
	if err1 != nil || err2 != nil || err3 != nil {
		return g, fmt.Errorf("parse GUID %q: bad hex digits", s)
	}
	g.Data1, g.Data2, g.Data3 = uint32(d1), uint16(d2), uint16(d3)
	pos := []int{19, 21, 24, 26, 28, 30, 32, 34}
	for i, p := range pos {
		v, err := hex(p, p+2)
		if err != nil {
			return g, fmt.Errorf("parse GUID %q: bad hex digits", s)
		}
		g.Data4[i] = byte(v)
	}
	return g, nil
}
