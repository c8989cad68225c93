package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/ring"
)

func newMarkCmd() *cobra.Command {
	var save bool
	cmd := &cobra.Command{
		Use:   "mark [--save] TEXT...",
		Short: "Write a marker into every running iotrace trace or recording",
		Long: `Write a marker into every iotrace trace or recording running on this
machine, to bracket the interesting part of a long recording. The marker
appears as an event (op "marker", layer "marker") with TEXT as its note, at
the time of the call, in every output; filters never hide it.

With --save (TEXT optional), every running flight recorder (record --ring)
writes what it holds to a new numbered file; the marker, with its text
starting "` + ring.SavePrefix + `", ends that file and shows in every other trace.`,
		Example: `  iotrace mark "benchmark phase 2 starts"
  iotrace mark --save "the stall"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if save {
				return nil
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			text := strings.Join(args, " ")
			if save {
				text = ring.SaveRequestText(text)
			}
			n, err := sendMark(text)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("no running iotrace trace to mark")
			}
			if save {
				fmt.Fprintf(cmd.ErrOrStderr(), "iotrace: asked %d running trace(s) to save (flight recorders write a file, others show the marker)\n", n)
				return nil
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "iotrace: marked %d running trace(s)\n", n)
			return nil
		},
	}
	cmd.Flags().BoolVar(&save, "save", false, "ask every running flight recorder (record --ring) to write what it holds to a new file")
	return cmd
}
