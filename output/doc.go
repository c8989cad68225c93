// Package output renders a trace for people and for other programs. Each
// format is an [event.Sink]:
//
//   - text: one aligned line per event, like strace or wtrace, with the
//     detail Process Monitor shows (open flags, disposition, share mode, I/O
//     flags, priority); block I/O on its own lines with device, sector,
//     rwbs flags, queue wait and service time and a "← #ID" link to the
//     event that caused it; a summary that always shows what was lost,
//     left unpaired, unresolved or dropped.
//   - jsonl: one JSON object per line with stable snake_case names (see
//     docs/events.md); header, facts and trailer are objects of their own,
//     told apart by "type". [ReadJSONL] reads it back losslessly.
//   - csv: a header row and Process Monitor-like columns.
//
// The text and jsonl sinks do not allocate per event.
package output
