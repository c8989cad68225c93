package cli

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/live"
)

func TestWriteSessions(t *testing.T) {
	var b strings.Builder
	all := []live.SessionStatus{
		{Name: "iotrace-12", Guid: live.GUID{Data1: 0x1f0e5f22, Data2: 0x6d0b, Data3: 0x4c1e, Data4: [8]byte{0x9a, 0x4e, 0x69, 0x6f, 0x74, 0x73, 0x6d, 1}}, BufferSizeKB: 1024, NumberOfBuffers: 16, MinBuffers: 8, MaxBuffers: 64, FreeBuffers: 10,
			BuffersWritten: 77, EventsLost: 3, LogBuffersLost: 2, RealTimeBuffersLost: 1, FlushTimer: 1,
			LogFileMode: live.ModeRealTime | live.ModeSystemLogger, ClockType: live.ClockQPC, EnableFlags: live.DefaultFlags},
		{Name: "iotrace-99", LogFile: `C:\t.etl`, LogFileMode: 0x2, EnableFlags: live.FlagDiskIO | 0x10, ClockType: live.ClockCPUCycles},
		{Name: "EventLog-System", ClockType: live.ClockSystemTime, LogFileMode: 0x400 | 0x10000000},
	}
	if err := writeSessions(&b, nil, nil); err != nil || !strings.Contains(b.String(), "no ETW sessions") {
		t.Errorf("no sessions: %q %v", b.String(), err)
	}
	b.Reset()
	if err := writeSessions(&b, all, func(n string) bool { return n == "iotrace-99" }); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"iotrace, running", "iotrace, STALE: owner gone", "1024 KB × 16 (min 8, max 64), 10 free, 77 written",
		"real time, system logger", "file (circular)", "buffering (in memory), no per-processor buffering", `C:\t.etl`,
		"events 3, log buffers 2, real-time buffers 1", "guid          1f0e5f22-6d0b-4c1e-9a4e-696f74736d01", "flush timer   1 s", "clock         cycles",
		"PROC+THREAD+IMAGE+DISK_IO+FILENAME+DISK_IO_INIT+FILE_IO+FILE_IO_INIT", "DISK_IO+0x10", "system"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
