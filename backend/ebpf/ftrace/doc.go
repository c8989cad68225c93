// Package ftrace reads kernel trace events from a tracefs instance of its
// own (/sys/kernel/tracing/instances/NAME): it creates the instance, sets
// its clock, enables a few events, reads each CPU's trace_pipe_raw in the
// ring buffer's binary page format and removes the instance at Close.
//
// The decoding is pure (format.go, page.go): event formats and the page
// header are parsed from the kernel's own description files (events/.../
// format, events/header_page), so field offsets are never assumed. It is
// written by hand: no maintained Go library reads trace_pipe_raw, and the
// format is small (a page header, then 32-bit event headers with 27-bit
// time deltas, time extends and absolute stamps).
//
// iotrace uses it as a witness of block completions that no BPF program
// sees (docs/block.md, "Completions the kernel does not deliver").
package ftrace
