#!/usr/bin/env bash
# bench/block/missed.sh: counts the block completions the kernel delivers
# to ftrace but to no BPF program (docs/block.md, "Completions the kernel
# does not deliver"). A tracefs instance records block:block_rq_complete
# with the monotonic clock while bpftrace prints the time of every run of
# a program on the same tracepoint; a sqlite3 run of N autocommit inserts
# makes the completions. It prints the completions ftrace recorded between
# bpftrace's first and last, bpftrace's count, and the difference. Run as
# root, with nothing else attaching BPF programs:
#   sudo bash bench/block/missed.sh [N]        (N=2000 by default)
set -euo pipefail
N=${1:-2000}
[[ $(id -u) -eq 0 ]] || { echo "run as root" >&2; exit 1; }
for c in bpftrace sqlite3; do
	command -v $c >/dev/null || { echo "missing $c (scripts/setup installs it)" >&2; exit 1; }
done
tr=/sys/kernel/tracing
[[ -d $tr/instances ]] || tr=/sys/kernel/debug/tracing
out=$(mktemp -d)
inst=$tr/instances/iotrace-missed-$$
cleanup() {
	[[ -d $inst ]] && { echo 0 >"$inst/events/block/block_rq_complete/enable"; rmdir "$inst"; }
	rm -rf "$out"
}
trap cleanup EXIT
mkdir "$inst"
echo mono >"$inst/trace_clock"
echo 16384 >"$inst/buffer_size_kb"
echo 1 >"$inst/events/block/block_rq_complete/enable"
bpftrace -e 'tracepoint:block:block_rq_complete { printf("%llu\n", nsecs); }' >"$out/bpf" 2>"$out/bpf.err" &
bp=$!
for _ in $(seq 100); do grep -q Attaching "$out/bpf" 2>/dev/null && break; sleep 0.1; done
sqlite3 "$out/db" "create table t(a integer, b text)"
for i in $(seq "$N"); do echo "insert into t values($i, 'row $i');"; done | sqlite3 "$out/db"
sync
sleep 0.5
kill -INT $bp; wait $bp || true
echo 0 >"$inst/events/block/block_rq_complete/enable"
grep -E '^[0-9]+$' "$out/bpf" | sort -n >"$out/bpf.ts"
lo=$(head -1 "$out/bpf.ts"); hi=$(tail -1 "$out/bpf.ts")
nb=$(wc -l <"$out/bpf.ts")
nf=$(awk -v lo="$lo" -v hi="$hi" '/block_rq_complete:/ {
	for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { split($i, a, /[.:]/); t = a[1] * 1e9 + a[2] * 1e3; if (t >= lo && t <= hi) n++ }
} END { print n + 0 }' "$inst/trace")
echo "block_rq_complete between bpftrace's first and last run: ftrace $nf, bpftrace $nb, not delivered to BPF $((nf - nb))"
