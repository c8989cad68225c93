// Package perfetto writes a trace as Chrome / Perfetto trace-event JSON,
// the format ui.perfetto.dev and chrome://tracing open.
//
// The [Writer] is an event.Sink that streams:
//
//   - a track per process and thread (Chrome pid/tid; the per-CPU idle
//     threads, TID 0, get one track each, keyed by event.ThreadKey; a
//     reused pid gets its own process track), with an "X" slice per
//     file-layer operation; operations that overlap without nesting on
//     one thread (asynchronous I/O) go to extra lanes of that thread;
//   - a process per block device with its block I/Os as slices on lanes
//     (one lane per concurrently outstanding I/O), each with a nested
//     "queued" slice for the time before issue to the driver;
//   - flow arrows ("s" → "f", bound to the enclosing slices) from each
//     system call or file request to every block I/O it caused;
//   - counters ("C") of throughput per device and for the file layer;
//   - process and thread names as metadata ("M") events.
//
// Timestamps and durations are in microseconds with nanosecond decimals.
// Anything that cannot be drawn faithfully (a block I/O whose cause is not
// in the trace, a flow beyond the bounded look-back) is counted and
// reported in the output's metadata and by [Writer.Stats].
package perfetto
