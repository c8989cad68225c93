// Package parquetfile writes a trace as a Parquet file: one row per event,
// with names already resolved and the trace's identity (host, OS, trace id,
// wall-clock start) on every row, so that the files of many hosts can be
// globbed together by DuckDB, Spark, Trino or ClickHouse.
//
// The columns are documented in docs/parquet.md with their versioning
// rule: SchemaVersion is written to the file's key-value metadata under
// "iotrace.schema"; a version adds columns, never renames, retypes or
// removes one.
//
// The file is assembled here, from github.com/parquet-go/parquet-go's
// building blocks: its Thrift types and encoder for page headers and the
// footer, its RLE/bit-packed and delta encoders, and klauspost's zstd. The
// schema is fixed, so each column is a typed slice filled straight from
// the event (schema.go) and encoded as one column chunk per row group
// (chunk.go). parquet-go's generic writer took 0.9 µs per event, half of
// it in work this schema does not need: every value boxed, every string
// hashed into its dictionary (its Dictionary interface cannot be supplied
// by an application). Here a string is looked up by its data pointer
// first, which the trace reader's interned strings share, and columns that
// zstd cannot shrink are stored in raw zstd blocks; the file converts at
// twice the speed (docs/benchmarks.md). parquet-go's reader checks the
// result in the tests (every column of every row), and DuckDB reads it in
// the CLI's tests.
//
// Rows are buffered for one row group (Options.RowGroupRows) and written
// when it fills, so memory is bounded by a row group, not by the trace.
// Data pages are version 1, one per column chunk, with min/max statistics
// for the columns queries filter on.
package parquetfile
