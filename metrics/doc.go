// Package metrics turns a live event stream into Prometheus metrics with
// bounded label sets (what iotrace serve exports):
//
//   - [Sink], an event.Sink and prometheus.Collector: operations, bytes
//     and latency histograms (classic buckets and native) by layer, op,
//     device and process name; failed operations by error name;
//     operations without a start or completion;
//   - [Health], the tracer's own state: events delivered, the trailer's
//     counters (lost, unpaired, unresolved, dropped by reason) as the
//     backend reports them while it runs, start-up time;
//   - [ScriptMetrics], a script's aggregations as metrics.
//
// Memory depends on the label bounds, not on how long the stream runs:
// process names, devices, error names and script keys each go through a
// [TopN], which gives its busiest values series of their own and folds
// the rest into one series labelled [Other], re-ranked every window.
//
// It aggregates into client_golang's metric vectors (their counters and
// histograms, native buckets included), looked up once per label set.
package metrics
