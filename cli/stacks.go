package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/stacks"
	"github.com/iotrace/iotrace/symbolize"
)

// stackFlags are the flags of commands that show stacks: --stacks and
// --symbols.
type stackFlags struct {
	show    bool
	symbols []string
}

// addStackFlags binds --symbols (and --stacks when show is not "").
func addStackFlags(cmd *cobra.Command, o *stackFlags, show string) {
	fs := cmd.Flags()
	if show != "" {
		fs.BoolVar(&o.show, "stacks", false, show)
	}
	fs.StringArrayVar(&o.symbols, "symbols", nil, "a directory of symbol files for the trace's modules, searched first "+
		"(debuginfod's cache layout BUILDID/debuginfo, or .build-id/xx/rest.debug; Windows PDBs in symbol-store layout NAME.pdb/GUIDAGE/NAME.pdb, "+
		"and on Windows through dbghelp, before _NT_SYMBOL_PATH); repeatable")
}

// table returns the stack table that names frames from the trace's
// modules, the --symbols directories, /usr/lib/debug and the modules' own
// paths (when their build-id matches). Symbol files stop being read when
// ctx is done.
func (o *stackFlags) table(ctx context.Context) *stacks.Table {
	return stacks.New(stacks.Options{Symbols: symbolize.Options{Dirs: o.symbols, Done: ctx.Done()}})
}
