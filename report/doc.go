// Package report summarises a trace in one streaming pass: totals per
// layer, per op, per process (in process-tree order) and per file, cache
// behaviour, the block layer per device, errors, the slowest operations
// with their cause chain, and latency histograms and heatmaps.
//
// A [Report] is an event.Sink. Memory is bounded whatever the length of
// the trace: latencies go to fixed-bucket histograms and log-linear
// sketches (percentiles within hist.SketchRelativeError, under 0.8 %),
// and per-process, per-file and per-error tables keep at most
// Options.Capacity entries each (see [Options.Capacity] for how entries
// are pruned and the error bound that is then shown). Facts are used for
// process names, the process tree and device names only; paths must be
// resolved upstream (resolve.Resolver), and events with a handle but no
// path are counted and shown.
//
// [Report.Result] gives the summary as plain data (encode it with
// encoding/json); [Result.WriteText] draws it for a terminal.
package report
