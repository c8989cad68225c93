package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend/etw/live"
)

func newSessionsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the running ETW sessions (Windows), or stop a stale iotrace one",
		Long: `List every ETW session running on this Windows machine, like xperf -Loggers or
logman query -ets: name, buffers, events lost, real-time buffers lost, log
file, clock and kernel flags. Sessions named iotrace-<pid> are iotrace's; the
STATE column says whether their owner is still running.

"iotrace sessions stop NAME" stops an iotrace session whose owner is gone
(left behind by a crash). It never stops another tool's session nor the
session of a running iotrace.`,
		Example: `  iotrace sessions
  iotrace sessions stop iotrace-4312`,
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
	return cmd
}

// writeSessions prints the session table.
func writeSessions(w io.Writer, all []live.SessionStatus, stale func(string) bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tBUFFERS (KB×N, FREE)\tEVENTS LOST\tRT BUFFERS LOST\tLOG FILE\tCLOCK\tKERNEL FLAGS")
	for _, s := range all {
		state := "-"
		if _, ours := live.OwnerPid(s.Name); ours {
			state = "iotrace, running"
			if stale(s.Name) {
				state = "iotrace, STALE (owner gone)"
			}
		}
		logFile := s.LogFile
		if logFile == "" && s.RealTime() {
			logFile = "(real time)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d×%d, %d\t%d\t%d\t%s\t%s\t%s\n", s.Name, state, s.BufferSizeKB, s.NumberOfBuffers, s.FreeBuffers,
			s.EventsLost, s.RealTimeBuffersLost, logFile, clockName(s.ClockType), kernelFlags(s.EnableFlags))
	}
	return tw.Flush()
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
