#!/usr/bin/env bash
# bench/run.sh: the system-call tracing benchmark of the eBPF backend.
# Builds iotrace and the harness (bench/syscall), then runs 2M pread64 of
# 4 KiB from an mlock'ed cached file bare, under the count-only BPF floors,
# under `iotrace record`, under strace -f and under bpftrace printing each
# event, interleaved round by round with a bare run between every two
# (the workload on the last CPU, the tracers' processes on the others),
# and prints ns per call, the added ns per call (each run against the bare
# runs on either side of it, medians) and the target ratios; then the start-up time and the cost on an
# untraced system call; then the user-stack benchmark (unwind tables
# against the frame-pointer walk and bpftrace's ustack on a C program with
# and without frame pointers, trace size against perf --call-graph dwarf,
# unwind-table memory and start-up time). Run as root from the repository
# root:
#   sudo bash bench/run.sh              (ROUNDS=3 N=2000000 by default)
# BASE=/path/to/an/older/iotrace adds that binary as one more mode, run the
# same way in every round, and prints this tree's iotrace over it (the cost
# of a change, side by side: e.g. page-cache provenance, docs/benchmarks.md).
#   STACKS_ONLY=1 sudo bash bench/run.sh   (the user-stack benchmark alone)
#   NO_STACKS=1 sudo bash bench/run.sh     (everything but the user stacks)
#   KEEP_BUSY=1 sudo bash bench/run.sh     (the per-call tables with the
#   tracers' CPUs kept from idling in every mode: a spinner at SCHED_IDLE
#   on each; an idle sibling vCPU slows the workload's, and only iotrace's
#   runs keep one busy, with its reader)
#   STARTUP_ONLY=1 sudo bash bench/run.sh  (the start-up comparison alone:
#   iotrace record, record --layer file and trace against perf trace,
#   bpftrace and strace, whole process and until the command ran; with
#   BASE, that binary's record too, and the ratio to it)
# The block I/O benchmark is bench/block/run.sh; the time of each BPF
# program per run (the kernel's accounting) is bench/progtime.sh.
set -euo pipefail
ROUNDS=${ROUNDS:-3}
N=${N:-2000000}
[[ $(id -u) -eq 0 ]] || { echo "run as root" >&2; exit 1; }
for c in strace bpftrace go gcc perf; do
	command -v $c >/dev/null || { echo "missing $c (scripts/setup installs it)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Built as README builds it: without cgo (a static binary; no dynamic
# loader in its start-up).
CGO_ENABLED=0 go build -o "$out/iotrace" ./cmd/iotrace
go build -o "$out/syscall-bench" ./bench/syscall
extra=()
[[ -n ${STACKS_ONLY:-} ]] && extra+=(-stacks-only)
[[ -n ${NO_STACKS:-} ]] && extra+=(-no-stacks)
[[ -n ${STARTUP_ONLY:-} ]] && extra+=(-startup-only)
[[ -n ${KEEP_BUSY:-} ]] && extra+=(-keep-busy)
"$out/syscall-bench" -iotrace "$out/iotrace" -rounds "$ROUNDS" -n "$N" ${BASE:+-base "$BASE"} "${extra[@]}"
