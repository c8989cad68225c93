package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend/etw/live"
	"github.com/iotrace/iotrace/internal/termesc"
)

func newSessionsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the running ETW sessions (Windows), or stop a stale iotrace one",
		Long: `List every ETW session running on this Windows machine, like xperf -Loggers or
logman query -ets: for each, its log file mode (real time, file, circular,
buffering, system logger, ...), log file, clock, buffers (size, count, minimum
and maximum, free, written), flush timer, events lost, log buffers lost and
real-time buffers lost, and the kernel flags by name. Sessions named iotrace-<pid> are iotrace's; the
STATE column says whether their owner is still running.

"iotrace sessions stop NAME" stops an iotrace session whose owner is gone
(left behind by a crash). It never stops another tool's session nor the
session of a running iotrace.

"iotrace sessions grant USER", run by an administrator, lets USER trace
without an elevated prompt: it grants USER iotrace's session GUIDs and
the kernel provider (EventAccessControl; docs/windows.md).`,
		Example: `  iotrace sessions
  iotrace sessions stop iotrace-4312
  iotrace sessions grant CONTOSO\alice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := live.DefaultAPI()
			if err != nil {
				return err
			}
			all, err := live.Sessions(api)
			if err != nil {
				return err
			}
			procs, err := api.Processes()
			if err != nil {
				return fmt.Errorf("list processes: %w", err)
			}
			return writeSessions(cmd.OutOrStdout(), all, func(name string) bool { return live.Stale(name, procs, api.Pid()) })
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "stop NAME",
		Short: "Stop an iotrace session left behind by an iotrace process that is gone",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := live.DefaultAPI()
			if err != nil {
				return err
			}
			st, err := live.StopStale(api, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped %s (events lost: %d, real-time buffers lost: %d)\n", args[0], st.EventsLost, st.RealTimeBuffersLost)
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "grant USER",
		Short: "Let USER (DOMAIN\\name or a SID) trace without elevation (run as administrator)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := live.DefaultAPI()
			if err != nil {
				return err
			}
			if err := live.Grant(api, args[0]); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "granted %s the kernel provider (%v), iotrace's provider (%v) and iotrace's session GUIDs:\n",
				termesc.String(args[0]), live.SystemTraceControlGUID, live.MarkerGUID)
			for _, g := range live.SessionGUIDs() {
				fmt.Fprintf(w, "  %v\n", g)
			}
			return nil
		},
	})
	return cmd
}

// writeSessions prints one block per session, with what xperf -Loggers
// and logman query -ets show: log file mode, clock, buffers (size, count,
// minimum and maximum, free, written), flush timer, the three loss
// counters, the log file, and the kernel flags by name.
func writeSessions(w io.Writer, all []live.SessionStatus, stale func(string) bool) error {
	if len(all) == 0 {
		_, err := fmt.Fprintln(w, "no ETW sessions are running")
		return err
	}
	for i, s := range all {
		if i > 0 {
			fmt.Fprintln(w)
		}
		state := ""
		if _, ours := live.OwnerPid(s.Name); ours {
			state = "  (iotrace, running)"
			if stale(s.Name) {
				state = "  (iotrace, STALE: owner gone; iotrace sessions stop " + s.Name + ")"
			}
		}
		logFile := s.LogFile
		if logFile == "" {
			logFile = "-"
		}
		flush := "default (1 s)"
		if s.FlushTimer > 0 {
			flush = fmt.Sprintf("%d s", s.FlushTimer)
		}
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "%s%s\n", termesc.String(s.Name), state)
		fmt.Fprintf(tw, "  mode\t%s\n", logFileMode(s.LogFileMode))
		fmt.Fprintf(tw, "  guid\t%v\n", s.Guid)
		fmt.Fprintf(tw, "  log file\t%s\n", termesc.String(logFile))
		fmt.Fprintf(tw, "  clock\t%s\n", clockName(s.ClockType))
		fmt.Fprintf(tw, "  buffers\t%d KB × %d (min %d, max %d), %d free, %d written\n",
			s.BufferSizeKB, s.NumberOfBuffers, s.MinBuffers, s.MaxBuffers, s.FreeBuffers, s.BuffersWritten)
		fmt.Fprintf(tw, "  flush timer\t%s\n", flush)
		fmt.Fprintf(tw, "  lost\tevents %d, log buffers %d, real-time buffers %d\n", s.EventsLost, s.LogBuffersLost, s.RealTimeBuffersLost)
		fmt.Fprintf(tw, "  kernel flags\t%s\n", kernelFlags(s.EnableFlags))
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// logFileMode names the EVENT_TRACE_*_MODE bits of a session.
func logFileMode(m uint32) string {
	names := []struct {
		bit  uint32
		name string
	}{
		{0x00000100, "real time"}, {0x00000001, "file (sequential)"}, {0x00000002, "file (circular)"},
		{0x00000004, "append"}, {0x00000008, "new file"}, {0x00000020, "preallocate"},
		{0x00000040, "nonstoppable"}, {0x00000080, "secure"}, {0x00000400, "buffering (in memory)"},
		{0x00000800, "private"}, {0x00001000, "add header"}, {0x00004000, "global sequence"},
		{0x00008000, "local sequence"}, {0x00010000, "relog"}, {0x00020000, "private in proc"},
		{0x01000000, "paged memory"}, {0x02000000, "system logger"}, {0x08000000, "independent"},
		{0x10000000, "no per-processor buffering"}, {0x80000000, "in triage dumps"},
	}
	var out []string
	for _, n := range names {
		if m&n.bit != 0 {
			out = append(out, n.name)
			m &^= n.bit
		}
	}
	if m != 0 {
		out = append(out, fmt.Sprintf("%#x", m))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func clockName(c uint32) string {
	switch c {
	case live.ClockQPC:
		return "qpc"
	case live.ClockSystemTime:
		return "system"
	case live.ClockCPUCycles:
		return "cycles"
	}
	return fmt.Sprint(c)
}

// kernelFlags names the EnableFlags bits iotrace knows, the rest in hex.
func kernelFlags(f uint32) string {
	if f == 0 {
		return "-"
	}
	names := []struct {
		bit  uint32
		name string
	}{
		{live.FlagProcess, "PROC"}, {live.FlagThread, "THREAD"}, {live.FlagImageLoad, "IMAGE"},
		{live.FlagDiskIO, "DISK_IO"}, {live.FlagDiskFileIO, "FILENAME"}, {live.FlagDiskIOInit, "DISK_IO_INIT"},
		{live.FlagFileIO, "FILE_IO"}, {live.FlagFileIOInit, "FILE_IO_INIT"},
	}
	var out []string
	for _, n := range names {
		if f&n.bit != 0 {
			out = append(out, n.name)
			f &^= n.bit
		}
	}
	if f != 0 {
		out = append(out, fmt.Sprintf("%#x", f))
	}
	return strings.Join(out, "+")
}
