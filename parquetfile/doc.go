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
// The encoding is github.com/parquet-go/parquet-go's. It was chosen over
// github.com/apache/arrow-go after writing the same 2 M rows with both
// (zstd, dictionaries, one core): parquet-go took 1.0 CPU-s, 24 MB of file
// and 28 MB of memory; arrow-go 3.5 CPU-s, 46 MB and 200 MB, and a binary
// 30 MB larger (docs/benchmarks.md). Rows are buffered in small batches and
// row groups are flushed as they fill, so memory is bounded by a row group,
// not by the trace.
package parquetfile
