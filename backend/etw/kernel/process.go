package kernel

// Process opcodes (kernel group 3).
const (
	OpcodeProcessStart   = 1
	OpcodeProcessEnd     = 2
	OpcodeProcessDCStart = 3
	OpcodeProcessDCEnd   = 4
	OpcodeProcessDefunct = 39
	// OpcodeProcessImageLoad is an image load logged in the Process group.
	OpcodeProcessImageLoad = 10
)

// Process layouts by version (the pointer-sized first field is the
// UniqueProcessKey from v2 on, the page directory base in v1):
//
//	v0: ProcessId P, ParentId P, UserSID, ImageFileName astr
//	v1: P, ProcessId, ParentId, SessionId, ExitStatus, UserSID, ImageFileName
//	v2: v1 + CommandLine wstr
//	v3: P, ProcessId, ParentId, SessionId, ExitStatus, DirectoryTableBase P, UserSID, ImageFileName, CommandLine
//	v4: v3 with Flags u32 after DirectoryTableBase, + PackageFullName, ApplicationId wstr
//	v5+: v4 + fields iotrace does not read
var (
	processV0 = []field{ptr("ProcessId", dPid), ptr("ParentId", dPPid), sid("UserSID"), astr("ImageFileName", dImageFileName)}
	processV1 = []field{ptr("UniqueProcessKey", dNone), u32("ProcessId", dPid), u32("ParentId", dPPid),
		u32("SessionId", dSession), u32("ExitStatus", dExitStatus), sid("UserSID"), astr("ImageFileName", dImageFileName)}
	processV2 = append(append([]field(nil), processV1...), wstr("CommandLine", dName2))
	processV3 = []field{ptr("UniqueProcessKey", dNone), u32("ProcessId", dPid), u32("ParentId", dPPid),
		u32("SessionId", dSession), u32("ExitStatus", dExitStatus), ptr("DirectoryTableBase", dNone),
		sid("UserSID"), astr("ImageFileName", dImageFileName), wstr("CommandLine", dName2)}
	processV4 = []field{ptr("UniqueProcessKey", dNone), u32("ProcessId", dPid), u32("ParentId", dPPid),
		u32("SessionId", dSession), u32("ExitStatus", dExitStatus), ptr("DirectoryTableBase", dNone),
		u32("Flags", dNone), sid("UserSID"), astr("ImageFileName", dImageFileName), wstr("CommandLine", dName2)}
)

func addProcess(t *table) {
	phases := []struct {
		code  uint16
		name  string
		phase Phase
	}{
		{OpcodeProcessStart, "Start", PhaseStart}, {OpcodeProcessEnd, "End", PhaseEnd},
		{OpcodeProcessDCStart, "DCStart", PhaseDCStart}, {OpcodeProcessDCEnd, "DCEnd", PhaseDCEnd},
		{OpcodeProcessDefunct, "Defunct", PhaseDefunct},
	}
	for _, p := range phases {
		t.name(ClassProcess, p.code, p.name)
		for v, l := range [][]field{processV0, processV1, processV2, processV3, processV4, processV4} {
			t.add(ClassProcess, []uint16{p.code}, []uint16{uint16(v)}, spec{kind: KindProcess, phase: p.phase, fields: l})
		}
	}
	t.name(ClassProcess, 32, "PerfCtr")
	t.name(ClassProcess, 33, "PerfCtrRundown")
	t.name(ClassProcess, 11, "Terminate")
	t.ignore(ClassProcess, 11, 32, 33)
	// Image loads are logged in the Process group (PERFINFO_LOG_TYPE
	// IMAGELOAD = group 3, type 10) with the Image layouts.
	t.name(ClassProcess, OpcodeProcessImageLoad, "ImageLoad")
	for v, l := range [][]field{imageV0, imageV1, imageV2, imageV2} {
		t.add(ClassProcess, []uint16{OpcodeProcessImageLoad}, []uint16{uint16(v)},
			spec{native: "Image/Load", kind: KindImage, phase: PhaseStart, fields: l})
	}
}
