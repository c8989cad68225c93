package kernel

import "github.com/iotrace/iotrace/event"

// Microsoft-Windows-Kernel-File event ids. Version 0 events use the
// FileIo v2 layouts and version 1 events the FileIo v3 layouts (Read and
// Write append ExtraFlags u32, which iotrace does not read).
const (
	KernelFileNameCreate    = 10
	KernelFileNameDelete    = 11
	KernelFileCreate        = 12
	KernelFileCleanup       = 13
	KernelFileClose         = 14
	KernelFileRead          = 15
	KernelFileWrite         = 16
	KernelFileSetInfo       = 17
	KernelFileSetDelete     = 18
	KernelFileRename        = 19
	KernelFileDirEnum       = 20
	KernelFileFlush         = 21
	KernelFileQueryInfo     = 22
	KernelFileFSCTL         = 23
	KernelFileOperationEnd  = 24
	KernelFileDirNotify     = 25
	KernelFileDeletePath    = 26
	KernelFileRenamePath    = 27
	KernelFileSetLinkPath   = 28
	KernelFileRename29      = 29
	KernelFileCreateNewFile = 30
	KernelFileSetSecurity   = 31
	KernelFileQuerySecurity = 32
	KernelFileSetEA         = 33
	KernelFileQueryEA       = 34
)

var kernelFileRequests = []struct {
	id     uint16
	name   string
	op     event.Op
	v0, v1 []field
}{
	{KernelFileCreate, "Create", event.OpOpen, createV2, createV3},
	{KernelFileCleanup, "Cleanup", event.OpCleanup, simpleV2, simpleV3},
	{KernelFileClose, "Close", event.OpClose, simpleV2, simpleV3},
	{KernelFileRead, "Read", event.OpRead, readWriteV2, readWriteV3},
	{KernelFileWrite, "Write", event.OpWrite, readWriteV2, readWriteV3},
	{KernelFileSetInfo, "SetInformation", event.OpSetInfo, infoV2, infoV3},
	{KernelFileSetDelete, "SetDelete", event.OpDelete, infoV2, infoV3},
	{KernelFileRename, "Rename", event.OpRename, infoV2, infoV3},
	{KernelFileDirEnum, "DirEnum", event.OpReadDir, dirEnumV2, dirEnumV3},
	{KernelFileFlush, "Flush", event.OpFlush, simpleV2, simpleV3},
	{KernelFileQueryInfo, "QueryInformation", event.OpStat, infoV2, infoV3},
	{KernelFileFSCTL, "FSCTL", event.OpFSControl, infoV2, infoV3},
	{KernelFileDirNotify, "DirNotify", event.OpNotify, dirEnumV2, dirEnumV3},
	{KernelFileDeletePath, "DeletePath", event.OpDelete, pathOpV2, pathOpV3},
	{KernelFileRenamePath, "RenamePath", event.OpRename, pathOpV2, pathOpV3},
	{KernelFileSetLinkPath, "SetLinkPath", event.OpSetInfo, pathOpV2, pathOpV3},
	{KernelFileRename29, "Rename29", event.OpRename, infoV2, infoV3},
	{KernelFileCreateNewFile, "CreateNewFile", event.OpOpen, createV2, createV3},
	{KernelFileSetSecurity, "SetSecurity", event.OpSetInfo, nil, infoV3},
	{KernelFileQuerySecurity, "QuerySecurity", event.OpStat, nil, infoV3},
	{KernelFileSetEA, "SetEA", event.OpSetInfo, nil, infoV3},
	{KernelFileQueryEA, "QueryEA", event.OpStat, nil, infoV3},
}

func addKernelFile(t *table) {
	t.name(ClassKernelFile, KernelFileNameCreate, "NameCreate")
	t.name(ClassKernelFile, KernelFileNameDelete, "NameDelete")
	t.add(ClassKernelFile, []uint16{KernelFileNameCreate}, []uint16{0, 1}, spec{kind: KindFileName, fields: fileNameLayout})
	t.add(ClassKernelFile, []uint16{KernelFileNameDelete}, []uint16{0, 1}, spec{kind: KindFileNameDelete, fields: fileNameLayout})
	for _, r := range kernelFileRequests {
		t.name(ClassKernelFile, r.id, r.name)
		s := spec{kind: KindFileRequest, op: r.op}
		if r.v0 != nil {
			s.fields = r.v0
			t.add(ClassKernelFile, []uint16{r.id}, []uint16{0}, s)
		}
		s.fields = r.v1
		t.add(ClassKernelFile, []uint16{r.id}, []uint16{1}, s)
	}
	t.name(ClassKernelFile, KernelFileOperationEnd, "OperationEnd")
	t.add(ClassKernelFile, []uint16{KernelFileOperationEnd}, []uint16{0, 1}, spec{kind: KindFileOpEnd, fields: opEndLayout})
}
