// Package event is iotrace's one model for file-system and block I/O on every
// operating system.
//
// A trace is a stream delivered to a [Sink]: one [Header], then any mix of
// [Event]s (operations) and [Fact]s (what a later reader needs to resolve
// names: handle → path bindings, processes, threads, devices, volumes), then
// one [Trailer] with the [Stats] of what was lost, left unpaired or left
// unresolved.
//
// Times are nanoseconds from the trace start; [Header.StartWall] anchors them
// to UTC so that traces from different sources line up. Threads are keyed by
// [ThreadKey], which keeps the per-CPU idle threads (TID 0) apart, and
// processes by [ProcessKey] (pid plus start time), which survives pid reuse.
//
// The package uses the standard library only.
package event
