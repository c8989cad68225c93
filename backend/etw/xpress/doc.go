// Package xpress implements the MS-XCA "plain LZ77" compression format
// (COMPRESSION_FORMAT_XPRESS, value 3), the codec Windows uses for
// compressed ETL buffers ([MS-XCA] §2.3 and §2.4).
//
// [Decompress] writes into a caller-provided buffer, checks every bound and
// reports corrupt input as a *[CorruptError] naming the input offset; it
// never panics and never allocates. [Compress] is a small greedy encoder
// used to build test data and synthetic traces.
package xpress
