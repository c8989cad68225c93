package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newMarkCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mark TEXT...",
		Short: "Write a marker into every running iotrace trace or recording",
		Long: `Write a marker into every iotrace trace or recording running on this
machine, to bracket the interesting part of a long recording. The marker
appears as an event (op "marker", layer "marker") with TEXT as its note, at
the time of the call, in every output; filters never hide it.`,
		Example: `  iotrace mark "benchmark phase 2 starts"`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := strings.Join(args, " ")
			n, err := sendMark(text)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("no running iotrace trace to mark")
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "iotrace: marked %d running trace(s)\n", n)
			return nil
		},
	}
}
