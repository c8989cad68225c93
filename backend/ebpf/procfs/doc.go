// Package procfs reads the state of Linux processes from a /proc tree:
// command name, executable, command line, parent, start time, working
// directory and open descriptors. The eBPF backend uses it for the rundown
// at the start of a trace (so that files opened before tracing get names)
// and as the fallback for a descriptor first seen later.
//
// The root directory is a parameter, so the parsers are tested against a
// fake tree on any operating system.
package procfs
