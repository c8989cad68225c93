package symbolize

import (
	"runtime"

	"github.com/iotrace/iotrace/symbolize/dbghelp"
)

// systemPE is dbghelp.dll, opened on the first Windows module's frame,
// with the --symbols directories and _NT_SYMBOL_PATH. Its session ends
// with Close, or when the Symbolizer is garbage.
func systemPE(s *Symbolizer) PEResolver {
	r := dbghelp.New(dbghelp.Options{Dirs: s.opts.Dirs})
	s.closePE = r.Close
	runtime.AddCleanup(s, func(r *dbghelp.Resolver) { _ = r.Close() }, r)
	return r
}
