// Package ownprovider encodes and decodes the events iotrace writes into
// its own ETW sessions, as a classic provider (EVENT_TRACE_HEADER records
// written with TraceEvent): markers from `iotrace mark`, and in a
// `record -o t.etl` file the facts a raw kernel .etl lacks — the volume →
// drive-letter map and each loaded image's identity (PE timestamp and
// size, CodeView PDB GUID, age and name) — so that the file resolves paths
// and symbols on another machine like a .iot does.
//
// Every event has the provider GUID, version 0 and one of the opcodes
// below; payload integers are little-endian and fixed-width (64-bit
// addresses whatever the writer's pointer size); strings are UTF-16LE
// terminated by a NUL. docs/windows.md documents the events. Decoding
// is pure and never panics: a short or malformed payload is an error
// naming the field and its offset.
package ownprovider
