package kernel

// Microsoft-Windows-Kernel-Process event ids (manifest provider
// 22fb2cd6-…): what a user-mode consumer gets instead of the kernel
// Process/Thread/Image groups (Windows 7 and later).
const (
	KernelProcessStart    = 1
	KernelProcessStop     = 2
	KernelThreadStart     = 3
	KernelThreadStop      = 4
	KernelImageLoad       = 5
	KernelImageUnload     = 6
	KernelCPUBasePriority = 7
	KernelCPUPriority     = 8
	KernelPagePriority    = 9
	KernelIOPriority      = 10
	KernelProcessFreeze   = 11
	KernelJobStart        = 13
	KernelJobTerminate    = 14
	KernelProcessRundown  = 15
	KernelDiskIoAttrStart = 17
	KernelDiskIoAttrStop  = 18
)

// Kernel-Process layouts by id and version, from the provider's manifest:
//
//	ProcessStart v0: ProcessID u32, CreateTime u64, ParentProcessID u32,
//	    SessionID u32, ImageName wstr (the NT path of the executable)
//	ProcessStart v1, v2: v0 with Flags u32 before ImageName (v2 appends
//	    ImageChecksum, TimeDateStamp, PackageFullName, PackageRelativeAppId)
//	ProcessStart v3: ProcessID, ProcessSequenceNumber u64, CreateTime,
//	    ParentProcessID, ParentProcessSequenceNumber u64, SessionID, Flags,
//	    ProcessTokenElevationType u32, ProcessTokenIsElevated u32,
//	    MandatoryLabel SID, ImageName wstr, ...
//	ProcessStop v0: ProcessID, CreateTime, ExitTime u64, ExitCode u32,
//	    TokenElevationType u32, HandleCount u32, CommitCharge u64,
//	    CommitPeak u64, ImageName astr (the 15-character short name)
//	ProcessStop v1: v0 with CPUCycleCount u64 and five u32 I/O and fault
//	    counts before ImageName; v2: v1 with ProcessSequenceNumber u64
//	    after ProcessID
//	ProcessRundown v0: the ProcessStart v1 layout; v1: the v3 layout
//	ThreadStart, ThreadStop v0, v1: ProcessID u32, ThreadID u32, stack
//	    and start addresses (v1 appends SubProcessTag, CycleTime)
//	ImageLoad, ImageUnload v0: ImageBase P, ImageSize P, ProcessID u32,
//	    ImageCheckSum u32, TimeDateStamp u32, DefaultBase P, ImageName wstr
var (
	kpStartV0 = []field{u32("ProcessID", dPid), u64("CreateTime", dNone), u32("ParentProcessID", dPPid),
		u32("SessionID", dSession), wstr("ImageName", dName)}
	kpStartV1 = []field{u32("ProcessID", dPid), u64("CreateTime", dNone), u32("ParentProcessID", dPPid),
		u32("SessionID", dSession), u32("Flags", dNone), wstr("ImageName", dName)}
	kpStartV3 = []field{u32("ProcessID", dPid), u64("ProcessSequenceNumber", dNone), u64("CreateTime", dNone),
		u32("ParentProcessID", dPPid), u64("ParentProcessSequenceNumber", dNone), u32("SessionID", dSession),
		u32("Flags", dNone), u32("ProcessTokenElevationType", dNone), u32("ProcessTokenIsElevated", dNone),
		rawSID("MandatoryLabel"), wstr("ImageName", dName)}

	kpStopV0 = []field{u32("ProcessID", dPid), u64("CreateTime", dNone), u64("ExitTime", dNone),
		u32("ExitCode", dExitStatus), u32("TokenElevationType", dNone), u32("HandleCount", dNone),
		u64("CommitCharge", dNone), u64("CommitPeak", dNone), astr("ImageName", dImageFileName)}
	kpStopV1 = []field{u32("ProcessID", dPid), u64("CreateTime", dNone), u64("ExitTime", dNone),
		u32("ExitCode", dExitStatus), u32("TokenElevationType", dNone), u32("HandleCount", dNone),
		u64("CommitCharge", dNone), u64("CommitPeak", dNone), u64("CPUCycleCount", dNone),
		skip("ReadOperationCount..HardFaultCount", 20), astr("ImageName", dImageFileName)}
	kpStopV2 = []field{u32("ProcessID", dPid), u64("ProcessSequenceNumber", dNone), u64("CreateTime", dNone),
		u64("ExitTime", dNone), u32("ExitCode", dExitStatus), u32("TokenElevationType", dNone),
		u32("HandleCount", dNone), u64("CommitCharge", dNone), u64("CommitPeak", dNone),
		u64("CPUCycleCount", dNone), skip("ReadOperationCount..HardFaultCount", 20),
		astr("ImageName", dImageFileName)}

	kpThread = []field{u32("ProcessID", dPid), u32("ThreadID", dTid)}

	kpImageV0 = []field{ptr("ImageBase", dImageBase), ptr("ImageSize", dImageSize), u32("ProcessID", dPid),
		u32("ImageCheckSum", dNone), u32("TimeDateStamp", dNone), ptr("DefaultBase", dNone),
		wstr("ImageName", dName)}
)

func addKernelProcess(t *table) {
	c := ClassKernelProcess
	for id, n := range map[uint16]string{
		KernelProcessStart: "ProcessStart", KernelProcessStop: "ProcessStop",
		KernelThreadStart: "ThreadStart", KernelThreadStop: "ThreadStop",
		KernelImageLoad: "ImageLoad", KernelImageUnload: "ImageUnload",
		KernelCPUBasePriority: "CpuBasePriorityChange", KernelCPUPriority: "CpuPriorityChange",
		KernelPagePriority: "PagePriorityChange", KernelIOPriority: "IoPriorityChange",
		KernelProcessFreeze: "ProcessFreeze", KernelJobStart: "JobStart", KernelJobTerminate: "JobTerminate",
		KernelProcessRundown: "ProcessRundown", KernelDiskIoAttrStart: "PsDiskIoAttributionStart",
		KernelDiskIoAttrStop: "PsDiskIoAttributionStop",
	} {
		t.name(c, id, n)
	}
	start := spec{kind: KindProcess, phase: PhaseStart}
	for v, l := range [][]field{kpStartV0, kpStartV1, kpStartV1, kpStartV3} {
		start.fields = l
		t.add(c, []uint16{KernelProcessStart}, []uint16{uint16(v)}, start)
	}
	rundown := spec{kind: KindProcess, phase: PhaseDCStart}
	for v, l := range [][]field{kpStartV1, kpStartV3} {
		rundown.fields = l
		t.add(c, []uint16{KernelProcessRundown}, []uint16{uint16(v)}, rundown)
	}
	stop := spec{kind: KindProcess, phase: PhaseEnd}
	for v, l := range [][]field{kpStopV0, kpStopV1, kpStopV2} {
		stop.fields = l
		t.add(c, []uint16{KernelProcessStop}, []uint16{uint16(v)}, stop)
	}
	t.add(c, []uint16{KernelThreadStart}, []uint16{0, 1}, spec{kind: KindThread, phase: PhaseStart, fields: kpThread})
	t.add(c, []uint16{KernelThreadStop}, []uint16{0, 1}, spec{kind: KindThread, phase: PhaseEnd, fields: kpThread})
	t.add(c, []uint16{KernelImageLoad}, []uint16{0}, spec{kind: KindImage, phase: PhaseStart, fields: kpImageV0})
	t.add(c, []uint16{KernelImageUnload}, []uint16{0}, spec{kind: KindImage, phase: PhaseEnd, fields: kpImageV0})
	// Priority, freeze and job events carry nothing iotrace uses.
	t.ignore(c, KernelCPUBasePriority, KernelCPUPriority, KernelPagePriority, KernelIOPriority,
		KernelProcessFreeze, KernelJobStart, KernelJobTerminate, KernelDiskIoAttrStart, KernelDiskIoAttrStop)
}
