package cli

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/live"
)

func TestWriteSessions(t *testing.T) {
	var b strings.Builder
	all := []live.SessionStatus{
		{Name: "iotrace-12", BufferSizeKB: 1024, NumberOfBuffers: 16, FreeBuffers: 10, EventsLost: 3, RealTimeBuffersLost: 1,
			LogFileMode: live.ModeRealTime, ClockType: live.ClockQPC, EnableFlags: live.DefaultFlags},
		{Name: "iotrace-99", LogFile: `C:\t.etl`, EnableFlags: live.FlagDiskIO | 0x10},
		{Name: "EventLog-System", ClockType: live.ClockSystemTime},
	}
	if err := writeSessions(&b, all, func(n string) bool { return n == "iotrace-99" }); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"iotrace, running", "iotrace, STALE (owner gone)", "1024×16, 10", "(real time)", `C:\t.etl`,
		"PROC+THREAD+IMAGE+DISK_IO+FILENAME+DISK_IO_INIT+FILE_IO+FILE_IO_INIT", "DISK_IO+0x10", "system"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
