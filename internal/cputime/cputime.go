// Package cputime reads the CPU time the process has used, for benchmarks
// that report rates per CPU-second (a loaded machine inflates wall time,
// much less CPU time).
package cputime
