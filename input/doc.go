// Package input opens any trace file iotrace reads. [Open] sniffs the
// file's first bytes (never its extension) and dispatches through a small
// table of [Format]s: .iot trace files, jsonl traces written by iotrace,
// and (when registered) Windows .etl files. Every [Reader] delivers the
// trace to an event.Sink with names resolved from the trace's own facts.
package input
