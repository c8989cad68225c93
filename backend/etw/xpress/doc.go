// Package xpress implements the MS-XCA "plain LZ77" compression format
// (COMPRESSION_FORMAT_XPRESS, value 3), the codec Windows uses for
// compressed ETL buffers ([MS-XCA] §2.3 and §2.4).
//
// [Decompress] writes into a caller-provided buffer, checks every bound and
// reports corrupt input as a *[CorruptError] naming the input offset; it
// never panics and never allocates. Away from the ends of its input and
// output it decodes without per-byte checks, moving literals and matches
// in 8- and 16-byte words (a match of period under 8 is widened to a
// multiple of its period first); near the ends it decodes element by
// element with every bound checked. Tests compare it with a plain
// reference decoder on random, truncated and damaged streams. [Compress] is a small greedy encoder
// used to build test data and synthetic traces.
package xpress
