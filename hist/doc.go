// Package hist holds fixed-memory histograms for I/O analysis and draws
// them in the terminal the way biolatency does.
//
//   - [Log2] counts unsigned values in power-of-two buckets (0, 1, 2-3,
//     4-7, ...): the classic latency and size histogram.
//   - [Linear] counts signed values in equal-width buckets between a
//     minimum and a maximum, with underflow and overflow counts.
//   - [Sketch] estimates percentiles with a bounded relative error
//     (log-linear buckets, at most 1/128 off, see [Sketch.Quantile]) in a
//     few kilobytes, whatever the number of values.
//
// All three have Add, Merge, Count, Sum, Min and Max, marshal to JSON with
// their bucket data, and never allocate per value once their buckets
// exist. None is safe for concurrent use; merge per-goroutine copies.
package hist
