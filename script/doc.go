// Package script runs iotrace scripts: SystemTap-style probes and
// aggregations, written in Starlark, over the common event model.
//
// A [Script] is an [event.Sink]: put it at the end of any source (a live
// backend, an .iot or .etl reader) and it calls the script's handlers:
//
//	FILTER = "op == 'read' and latency > ms(10)"
//
//	lat = hist_log2("path", unit="usecs")
//
//	def on_event(e):
//	    lat.add(e.path, e.latency // 1000)
//
//	def on_end():
//	    print(lat)
//
// The filter (the script's FILTER and the command line's --where) is
// compiled once by package [where] into a Go predicate, so rejected events
// never reach the interpreter, and its pid, comm, layer and op conditions
// are offered to the backend ([Script.Pushdown]). Aggregations (count,
// sum, min, max, avg, hist_log2, hist_linear) are Go types keyed by any
// tuple; histograms print like the report command's (package hist), and
// a histogram indexed by a key is that key's histogram, with its
// statistics and percentiles (histvalue.go). items() and print() order
// the keys by any statistic (stats.go).
//
// Before a script runs, its code is checked as its filter is: an enum
// field compared with a name it never holds (e.op == "raed") is a load
// error at the literal (enumcheck.go).
//
// Scripts are sandboxed: no load(), no file or network access; output
// goes only to the writer the caller grants. Every handler call runs under
// a step limit, so an infinite loop stops with a clear message. Errors
// point at the script's file, line and column; a runtime error in a
// handler names the event that triggered it and stops the run, unless
// [Options.KeepGoing] is set.
//
// docs/scripts.md is the language reference.
package script
