// Package unwind turns the call frame information (CFI) of an ELF file
// into a compact unwind table, and walks a stack with such tables.
//
// A table (Table) holds, for every address of a file's code, the rule
// that recovers the caller's registers at that address: where the
// canonical frame address (CFA, the stack pointer before the call) is
// (stack pointer or frame pointer plus an offset, or one of a few
// recognised expressions: PLT stubs, signal frames, realigned stacks),
// where the caller's frame pointer was saved, and where the return
// address is. Registers other than the stack pointer, the frame pointer
// and the return address are not tracked: no unwinding rule of
// compiled C, C++, Go or Rust code needs them, and a rule that does
// (the CFA in another register, an expression not recognised) is kept
// as a stop, so that a walk ends there, flagged, rather than guess.
//
// Tables are built from .eh_frame (found through its section, or
// through PT_GNU_EH_FRAME and .eh_frame_hdr when section headers are
// gone), .debug_frame, and, for Go programs, the function table the Go
// runtime unwinds with (pclntab: the stack pointer's offset at every
// instruction, kept in stripped programs too), the addresses covered by
// none being "no CFI"; the code at the entry point, without CFI, is the
// outermost frame. A Go program whose function table is older than Go
// 1.18 and that has no CFI is marked as walkable by frame pointers (Go
// always keeps them). Tables are cached on disk by file identity
// (Cache).
//
// Walk unwinds a copy of a stack (registers and stack bytes) with the
// tables of the modules mapped at each address: the same algorithm as
// the BPF walker of backend/ebpf, which loads the same tables (Encode)
// into BPF maps, so that both give the same frames, and the stop
// reasons are the same.
//
// Hand-written because no Go library enumerates every row of every
// frame description entry: debug/dwarf has no CFI reader, and the CFI
// packages of debuggers (delve's pkg/dwarf/frame) evaluate one address
// at a time from the start of its entry. The design follows the
// profilers that unwind in BPF (Parca Agent's compact unwind tables,
// the OpenTelemetry eBPF profiler's stack deltas); the code is this
// package's own.
package unwind
