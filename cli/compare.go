package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/compare"
	"github.com/iotrace/iotrace/filter"
	"github.com/iotrace/iotrace/input"
)

// compareFlags are the flags of iotrace compare.
type compareFlags struct {
	format        string
	output        string
	top           int
	maps          []string
	strip         []string
	includePaging bool
	filter        filter.Options
}

func newCompareCmd() *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two traces of the same workload, side by side (also Linux against Windows)",
		Long: `compare summarises two traces (.iot, .etl, .jsonl; possibly from two operating
systems) and lines them up per normalized op and per file: counts, bytes,
latency p50/p99, time, disk I/Os per file-system op and cache-hit ratio, with
a B/A ratio and the largest time differences first.

Paths are lined up across machines with --map OLD=NEW (rewrite a prefix) and
--strip-prefix (drop a prefix); Windows paths use '/' and match ignoring case.
Windows paging I/O (cache manager, page faults) has no Linux system call
counterpart and is left out unless --include-paging.`,
		Example: `  iotrace compare before.iot after.iot
  iotrace compare linux.iot windows.etl --strip-prefix /home/me/proj --strip-prefix 'C:\Users\me\proj'
  iotrace compare a.iot b.iot --map /srv/old=/srv/new --format json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "-" && args[1] == "-" {
				return fmt.Errorf("compare: only one side can be standard input (-)")
			}
			stdout, finish, err := openSummary(f.output, cmd.InOrStdin(), cmd.OutOrStdout(), args...)
			if err != nil {
				return err
			}
			return finish(runCompare(cmd.Context(), args[0], args[1], &f, cmd.InOrStdin(), stdout))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	fl.StringVarP(&f.output, "output", "o", "", "write the comparison to this file instead of standard output")
	fl.IntVar(&f.top, "top", 20, "number of file rows")
	fl.StringArrayVar(&f.maps, "map", nil, "rewrite the path prefix OLD to NEW on both sides (OLD=NEW, repeatable)")
	fl.StringArrayVar(&f.strip, "strip-prefix", nil, "remove this path prefix on both sides (repeatable)")
	fl.BoolVar(&f.includePaging, "include-paging", false, "keep Windows paging I/O in the file layer")
	addFilterFlags(cmd, &f.filter)
	return cmd
}

func runCompare(ctx context.Context, pathA, pathB string, f *compareFlags, stdin io.Reader, stdout io.Writer) error {
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("--format %q: want text or json", f.format)
	}
	if f.top <= 0 {
		return fmt.Errorf("--top %d: want a positive number", f.top)
	}
	opts := compare.Options{StripPrefix: f.strip, TopN: f.top, IncludePaging: f.includePaging}
	for _, m := range f.maps {
		mp, err := compare.ParseMapping(m)
		if err != nil {
			return fmt.Errorf("--map: %w", err)
		}
		opts.Map = append(opts.Map, mp)
	}
	open := func(path string) (filteredSource, error) {
		flt, err := filter.New(f.filter) // one per side: it keeps state
		if err != nil {
			return filteredSource{}, err
		}
		in, err := input.OpenFrom(path, stdin)
		if err != nil {
			return filteredSource{}, err
		}
		return filteredSource{in: in, flt: flt}, nil
	}
	a, err := open(pathA)
	if err != nil {
		return err
	}
	defer a.in.Close()
	b, err := open(pathB)
	if err != nil {
		return err
	}
	defer b.in.Close()
	res, runErr := compare.Compare(ctx, a, b, pathA, pathB, opts)
	if res == nil {
		return runErr
	}
	// A damaged trace is compared as far as it was read; the error follows.
	if f.format == "json" {
		enc := json.NewEncoder(jsonOnTerminal(stdout, "json", "", stdout))
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	} else {
		err = res.WriteText(stdout, compare.TextOptions{Color: useColor(stdout)})
	}
	if runErr != nil {
		return damaged(ctx, fmt.Errorf("comparison covers only what was read: %w", runErr))
	}
	return err
}
