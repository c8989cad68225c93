// Package synth generates deterministic, realistic synthetic traces for
// tests and benchmarks, and records traces delivered to an event.Sink.
//
// [Generate] delivers a seeded trace to a sink: one Header, facts (rundown
// processes, threads, devices, volumes, fd / FileObject / FileKey
// bindings), events in time order, and a Trailer whose Stats count what
// the trace marks as lost, unpaired, unresolved and dropped. The same
// Options always give the same trace. With enough events (at least
// [MinEvents]) a trace exercises every op of its OS (see [Ops]) and every
// layer, failed operations, cache hits and misses with block I/O linked to
// the syscall that caused it, writeback, per-CPU idle-thread completions,
// pid reuse, unicode and long paths, markers, and events that never
// completed.
//
// [Recorder] is an event.Sink that keeps deep copies of everything it
// receives, in order, as a [Recorded] trace; [Recorded.Replay] plays one
// back and [Compare] reports how two traces differ, field by field.
// [AllFields] and [AllFieldsTrace] give events, facts, a header and a
// trailer with every field set, for encoder round-trip tests.
package synth
