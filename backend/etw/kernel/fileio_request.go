package kernel

import "github.com/iotrace/iotrace/event"

// FileIo request opcodes (kernel group 4). Requests are logged when the
// I/O manager issues them; OpEnd (76) carries the result, paired by IRP.
const (
	OpcodeCreate      = 64
	OpcodeCleanup     = 65
	OpcodeClose       = 66
	OpcodeRead        = 67
	OpcodeWrite       = 68
	OpcodeSetInfo     = 69
	OpcodeDelete      = 70
	OpcodeRename      = 71
	OpcodeDirEnum     = 72
	OpcodeFlush       = 73
	OpcodeQueryInfo   = 74
	OpcodeFSControl   = 75
	OpcodeOpEnd       = 76
	OpcodeDirNotify   = 77
	OpcodeDeletePath  = 79
	OpcodeRenamePath  = 80
	OpcodeSetLinkPath = 81
)

// Request layouts. v2 (Vista, 7) puts the issuing thread (TTID, pointer
// sized) second; v3 (8 and later) moves it after the handles as a 32-bit
// value. The Kernel-File provider's version 0 and 1 events use the same
// layouts as FileIo v2 and v3.
var (
	createV2 = []field{ptr("IrpPtr", dIrp), ptr("TTID", dTTID), ptr("FileObject", dFileObject),
		u32("CreateOptions", dCreateOptions), u32("FileAttributes", dAttributes), u32("ShareAccess", dShare),
		wstr("OpenPath", dName)}
	createV3 = []field{ptr("IrpPtr", dIrp), ptr("FileObject", dFileObject), u32("TTID", dTTID),
		u32("CreateOptions", dCreateOptions), u32("FileAttributes", dAttributes), u32("ShareAccess", dShare),
		wstr("OpenPath", dName)}

	simpleV2 = []field{ptr("IrpPtr", dIrp), ptr("TTID", dTTID), ptr("FileObject", dFileObject), ptr("FileKey", dFileKey)}
	simpleV3 = []field{ptr("IrpPtr", dIrp), ptr("FileObject", dFileObject), ptr("FileKey", dFileKey), u32("TTID", dTTID)}

	readWriteV2 = []field{u64("Offset", dOffset), ptr("IrpPtr", dIrp), ptr("TTID", dTTID), ptr("FileObject", dFileObject),
		ptr("FileKey", dFileKey), u32("IoSize", dSize), u32("IoFlags", dIOFlags)}
	readWriteV3 = []field{u64("Offset", dOffset), ptr("IrpPtr", dIrp), ptr("FileObject", dFileObject),
		ptr("FileKey", dFileKey), u32("TTID", dTTID), u32("IoSize", dSize), u32("IoFlags", dIOFlags)}

	infoV2 = []field{ptr("IrpPtr", dIrp), ptr("TTID", dTTID), ptr("FileObject", dFileObject), ptr("FileKey", dFileKey),
		ptr("ExtraInfo", dExtraInfo), u32("InfoClass", dInfoClass)}
	infoV3 = []field{ptr("IrpPtr", dIrp), ptr("FileObject", dFileObject), ptr("FileKey", dFileKey),
		ptr("ExtraInfo", dExtraInfo), u32("TTID", dTTID), u32("InfoClass", dInfoClass)}

	dirEnumV2 = []field{ptr("IrpPtr", dIrp), ptr("TTID", dTTID), ptr("FileObject", dFileObject), ptr("FileKey", dFileKey),
		u32("Length", dSize), u32("InfoClass", dInfoClass), u32("FileIndex", dFileIndex), wstr("FileName", dName)}
	dirEnumV3 = []field{ptr("IrpPtr", dIrp), ptr("FileObject", dFileObject), ptr("FileKey", dFileKey), u32("TTID", dTTID),
		u32("Length", dSize), u32("InfoClass", dInfoClass), u32("FileIndex", dFileIndex), wstr("FileName", dName)}

	pathOpV2 = []field{ptr("IrpPtr", dIrp), ptr("TTID", dTTID), ptr("FileObject", dFileObject), ptr("FileKey", dFileKey),
		ptr("ExtraInfo", dExtraInfo), u32("InfoClass", dInfoClass), wstr("FileName", dName)}
	pathOpV3 = []field{ptr("IrpPtr", dIrp), ptr("FileObject", dFileObject), ptr("FileKey", dFileKey),
		ptr("ExtraInfo", dExtraInfo), u32("TTID", dTTID), u32("InfoClass", dInfoClass), wstr("FileName", dName)}

	opEndLayout = []field{ptr("IrpPtr", dIrp), ptr("ExtraInfo", dExtraInfo), u32("NtStatus", dStatus)}
)

// fileIoRequests lists the FileIo request opcodes with their names, ops
// and v2/v3 layouts.
var fileIoRequests = []struct {
	code   uint16
	name   string
	op     event.Op
	v2, v3 []field
}{
	{OpcodeCreate, "Create", event.OpOpen, createV2, createV3},
	{OpcodeCleanup, "Cleanup", event.OpCleanup, simpleV2, simpleV3},
	{OpcodeClose, "Close", event.OpClose, simpleV2, simpleV3},
	{OpcodeRead, "Read", event.OpRead, readWriteV2, readWriteV3},
	{OpcodeWrite, "Write", event.OpWrite, readWriteV2, readWriteV3},
	{OpcodeSetInfo, "SetInfo", event.OpSetInfo, infoV2, infoV3},
	{OpcodeDelete, "Delete", event.OpDelete, infoV2, infoV3},
	{OpcodeRename, "Rename", event.OpRename, infoV2, infoV3},
	{OpcodeDirEnum, "DirEnum", event.OpReadDir, dirEnumV2, dirEnumV3},
	{OpcodeFlush, "Flush", event.OpFlush, simpleV2, simpleV3},
	{OpcodeQueryInfo, "QueryInfo", event.OpStat, infoV2, infoV3},
	{OpcodeFSControl, "FSControl", event.OpFSControl, infoV2, infoV3},
	{OpcodeDirNotify, "DirNotify", event.OpNotify, dirEnumV2, dirEnumV3},
	{OpcodeDeletePath, "DeletePath", event.OpDelete, nil, pathOpV3},
	{OpcodeRenamePath, "RenamePath", event.OpRename, nil, pathOpV3},
	{OpcodeSetLinkPath, "SetLinkPath", event.OpSetInfo, nil, pathOpV3},
}

func addFileIoRequests(t *table) {
	for _, r := range fileIoRequests {
		t.name(ClassFileIo, r.code, r.name)
		s := spec{kind: KindFileRequest, op: r.op}
		if r.v2 != nil {
			s.fields = r.v2
			t.add(ClassFileIo, []uint16{r.code}, []uint16{2}, s)
		}
		s.fields = r.v3
		t.add(ClassFileIo, []uint16{r.code}, []uint16{3}, s)
	}
	t.name(ClassFileIo, OpcodeOpEnd, "OpEnd")
	t.add(ClassFileIo, []uint16{OpcodeOpEnd}, []uint16{2, 3}, spec{kind: KindFileOpEnd, fields: opEndLayout})
}
