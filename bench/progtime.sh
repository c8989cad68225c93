#!/usr/bin/env bash
# bench/progtime.sh: the time each BPF program of `iotrace record` takes per
# run, by the kernel's own accounting (kernel.bpf_stats_enabled: run_cnt
# and run_time_ns of every program), while the pread64 workload of
# bench/run.sh runs under it. Unlike the wall-clock ratios of bench/run.sh
# (noisy to +-5 % run to run on a 2-CPU VM), it measures the programs
# alone: a change to one part of the system-call path shows as ns per run
# of sys_enter or sys_exit. The accounting itself adds about two clock
# reads per run (sched_switch, 33 instructions, measures about 80 ns).
# Run as root from the repository root:
#   sudo bash bench/progtime.sh                 (this tree's iotrace)
#   IOTRACE=/path/to/iotrace sudo bash bench/progtime.sh
# ROUNDS=3 by default; the workload runs on CPU 1 and iotrace on CPU 0, so
# that the reader and the traced thread do not share a CPU.
set -euo pipefail
ROUNDS=${ROUNDS:-3}
[[ $(id -u) -eq 0 ]] || { echo "run as root" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "missing bpftool (scripts/setup installs it)" >&2; exit 1; }
out=$(mktemp -d)
prev=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q kernel.bpf_stats_enabled=$prev; rm -rf "$out"' EXIT
iot=${IOTRACE:-}
if [[ -z $iot ]]; then
	CGO_ENABLED=0 go build -o "$out/iotrace" ./cmd/iotrace
	iot=$out/iotrace
fi
go build -o "$out/syscall-bench" ./bench/syscall
head -c $((4 << 20)) /dev/urandom > "$out/data"
sysctl -q kernel.bpf_stats_enabled=1
for r in $(seq "$ROUNDS"); do
	taskset -c 0 "$iot" record -q -o "$out/t.iot" -- taskset -c 1 "$out/syscall-bench" workload pread 6000000 "$out/data" >/dev/null 2>&1 &
	pid=$!
	sleep 2
	bpftool prog show -j > "$out/a.json"
	sleep 2
	bpftool prog show -j > "$out/b.json"
	wait $pid
	python3 - "$out/a.json" "$out/b.json" "$r" <<'PY'
import json, sys
a = {p["id"]: p for p in json.load(open(sys.argv[1]))}
b = {p["id"]: p for p in json.load(open(sys.argv[2]))}
rows = []
for i, p in b.items():
    q = a.get(i)
    if not q or "run_cnt" not in p:
        continue
    n = p["run_cnt"] - q.get("run_cnt", 0)
    if n < 1000:
        continue
    rows.append((p.get("name", "?"), n, (p["run_time_ns"] - q.get("run_time_ns", 0)) / n))
for name, n, ns in sorted(rows):
    print("round %s  %-16s %10d runs  %7.1f ns/run" % (sys.argv[3], name, n, ns))
PY
done
