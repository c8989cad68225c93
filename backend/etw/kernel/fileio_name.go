package kernel

// FileIo name event opcodes (kernel group 4). They carry a FileKey (the
// documentation calls it FileObject) and the file's NT path; they are
// logged with PERFINFO headers (no thread or process).
const (
	OpcodeFileName       = 0
	OpcodeFileCreateName = 32
	OpcodeFileDeleteName = 35
	OpcodeFileRundown    = 36
	OpcodeMapFile        = 37
	OpcodeUnmapFile      = 38
	OpcodeMapFileDCStart = 39
	OpcodeMapFileDCEnd   = 40
)

// FileIo_Name layout (all versions): FileKey P, FileName wstr.
var fileNameLayout = []field{ptr("FileObject", dFileKey), wstr("FileName", dName)}

func addFileIoNames(t *table) {
	t.name(ClassFileIo, OpcodeFileName, "Name")
	t.name(ClassFileIo, OpcodeFileCreateName, "FileCreate")
	t.name(ClassFileIo, OpcodeFileDeleteName, "FileDelete")
	t.name(ClassFileIo, OpcodeFileRundown, "FileRundown")
	t.name(ClassFileIo, OpcodeMapFile, "MapFile")
	t.name(ClassFileIo, OpcodeUnmapFile, "UnmapFile")
	t.name(ClassFileIo, OpcodeMapFileDCStart, "MapFileDCStart")
	t.name(ClassFileIo, OpcodeMapFileDCEnd, "MapFileDCEnd")
	versions := []uint16{0, 1, 2, 3}
	t.add(ClassFileIo, []uint16{OpcodeFileName, OpcodeFileCreateName}, versions, spec{kind: KindFileName, fields: fileNameLayout})
	t.add(ClassFileIo, []uint16{OpcodeFileDeleteName}, versions, spec{kind: KindFileNameDelete, fields: fileNameLayout})
	t.add(ClassFileIo, []uint16{OpcodeFileRundown}, versions, spec{kind: KindFileRundown, fields: fileNameLayout})
	// Section mappings and minifilter events carry nothing iotrace uses.
	t.ignore(ClassFileIo, OpcodeMapFile, OpcodeUnmapFile, OpcodeMapFileDCStart, OpcodeMapFileDCEnd, 96, 97, 98, 99, 100, 101)
}
