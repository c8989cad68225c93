// Package tracefile reads and writes iotrace's own trace format, .iot.
//
// A .iot file is self-contained: besides the events it carries the facts a
// reader needs to resolve them later on any machine (handle → path
// bindings with their time history, processes, threads, devices, volumes)
// and the trailer's loss counters. It is written as a stream of chunks,
// each with its type, length and CRC32C, so a writer needs bounded memory
// and a damaged or truncated file still yields every intact chunk.
//
// [Writer] is an event.Sink: NewWriter(w, opts) and deliver a trace to it.
// [Reader] replays a file into an event.Sink in recorded order: Begin,
// events and facts as they were written, End. A damaged file delivers
// everything intact, then End with a trailer that counts the damage, and
// returns a *[DamageError] naming the byte offset of the first damage.
//
// Writers write format version 4 (prefix varints in records chunks;
// stacks and modules; a read's page-cache provenance), or for older
// readers version 3 (the same without provenance), version 2 (without
// stacks either) or version 1 (LEB128); Reader reads all four. The version-1 code (decode_v1.go, encode_v1.go) is
// generated from decode.go and encode.go by "go generate".
//
// The format is specified in docs/file-format.md.
package tracefile

//go:generate env IOTRACE_GENERATE=1 go test -run TestV1SourcesUpToDate .
