package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/input"
)

func newBackendsCmd(list func() []backend.Backend) *cobra.Command {
	return &cobra.Command{
		Use:   "backends",
		Short: "List the live tracing backends and file readers, and whether each works here",
		Long: `List every live tracing backend and every trace file reader built into iotrace.
For each it says whether it works on this machine and, when it does not,
exactly why (wrong operating system, missing privilege, kernel feature absent).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listBackends(cmd.OutOrStdout(), list(), input.Formats())
		},
	}
}

// listBackends writes the two tables.
func listBackends(w io.Writer, live []backend.Backend, formats []input.Format) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "LIVE BACKEND\tSTATUS\tDESCRIPTION")
	if len(live) == 0 {
		fmt.Fprintln(tw, "(none)\tnot available\tthis build of iotrace has no live tracing backend")
	}
	for _, b := range live {
		row(tw, b.Name(), b.Description(), b.Available())
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "FILE READER\tSTATUS\tDESCRIPTION")
	for _, f := range formats {
		var err error
		if f.Available != nil {
			err = f.Available()
		}
		row(tw, f.Name, f.Description, err)
	}
	return tw.Flush()
}

// row writes one backend or reader: its status and, when it is not
// available, why not on a line of its own.
func row(w io.Writer, name, desc string, err error) {
	if err == nil {
		fmt.Fprintf(w, "%s\tavailable\t%s\n", name, desc)
		return
	}
	fmt.Fprintf(w, "%s\tnot available\t%s\n", name, desc)
	fmt.Fprintf(w, "\t\twhy not: %v\n", err)
}
