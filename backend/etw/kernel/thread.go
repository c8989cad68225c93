package kernel

// Thread opcodes (kernel group 5).
const (
	OpcodeThreadStart   = 1
	OpcodeThreadEnd     = 2
	OpcodeThreadDCStart = 3
	OpcodeThreadDCEnd   = 4
)

// Thread layouts: v0 has TThreadId then ProcessId; v1 and later have
// ProcessId then TThreadId, followed by stack and priority fields iotrace
// does not read.
var (
	threadV0 = []field{u32("TThreadId", dTid), u32("ProcessId", dPid)}
	threadV1 = []field{u32("ProcessId", dPid), u32("TThreadId", dTid)}
)

func addThread(t *table) {
	for _, p := range []struct {
		code  uint16
		name  string
		phase Phase
	}{
		{OpcodeThreadStart, "Start", PhaseStart}, {OpcodeThreadEnd, "End", PhaseEnd},
		{OpcodeThreadDCStart, "DCStart", PhaseDCStart}, {OpcodeThreadDCEnd, "DCEnd", PhaseDCEnd},
	} {
		t.name(ClassThread, p.code, p.name)
		t.add(ClassThread, []uint16{p.code}, []uint16{0}, spec{kind: KindThread, phase: p.phase, fields: threadV0})
		t.add(ClassThread, []uint16{p.code}, []uint16{1, 2, 3, 4}, spec{kind: KindThread, phase: p.phase, fields: threadV1})
	}
	// Scheduler events (context switch, ready thread, ...) are not I/O.
	for code, name := range map[uint16]string{36: "CSwitch", 50: "ReadyThread", 66: "ThreadAffinity", 72: "SetName",
		48: "WorkerThread", 52: "SpinLock", 44: "CompCS", 41: "Reserved"} {
		t.name(ClassThread, code, name)
		t.ignore(ClassThread, code)
	}
}
