#!/usr/bin/env bash
# bench/block/run.sh: the block I/O benchmark. O_DIRECT 4 KiB random reads
# (fio, psync, queue depth 1) run bare, under iotrace's block tracer
# (bench/block, package backend/ebpf/blockio), under a bpftrace
# biolatency-style one-liner and under blktrace, interleaved round by round
# in one run, on two devices:
#   disk  a 1 GiB file on the root file system's device (realistic latency)
#   fast  a loop device backed by /dev/shm (a few us per I/O: the worst case
#         for a tracer's per-I/O cost)
# It prints the median IOPS of each, the slowdown ratio against bare and the
# added time per I/O. fio runs on CPU 0, and every CPU has a SCHED_IDLE
# spinner (SPIN=1, the default): a halted vCPU costs a VM exit to wake at
# every completion interrupt, and a tracer that keeps a CPU busy hides
# that cost, which made traced runs "faster" than bare ones; with the
# spinners no CPU halts in any mode, and any real task preempts them at
# once. Run as root from the repository root:
#   sudo bash bench/block/run.sh            (ROUNDS=3 RUNTIME=10 by default)
# iotrace-block-nowitness is the block tracer without its completion
# witness (a tracefs instance recording every completion, docs/block.md):
# the two side by side give the witness's cost.
# With IOTRACE=path/to/iotrace set and a working `iotrace record`, the same
# workload also runs under `iotrace record` (syscall + block tracing).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-10}
SPIN=${SPIN:-1}
DISKFILE=${DISKFILE:-/var/tmp/iotrace-block-bench.dat}
tmp=$(mktemp -d)
loopdev=""
spinners=()
cleanup() {
	[[ ${#spinners[@]} -gt 0 ]] && kill "${spinners[@]}" 2>/dev/null || true
	[[ -n $loopdev ]] && losetup -d "$loopdev" 2>/dev/null || true
	rm -rf "$tmp" /dev/shm/iotrace-block-bench.img
}
trap cleanup EXIT

[[ $(id -u) -eq 0 ]] || { echo "run as root" >&2; exit 1; }
for c in fio bpftrace python3 go losetup; do
	command -v $c >/dev/null || { echo "missing $c (scripts/setup)" >&2; exit 1; }
done
have_blktrace=1
command -v blktrace >/dev/null || have_blktrace=0

go build -o "$tmp/block" ./bench/block

# Devices.
if [[ ! -f $DISKFILE ]] || [[ $(stat -c %s "$DISKFILE") -lt $((1 << 30)) ]]; then
	fio --name=prep --filename="$DISKFILE" --size=1G --rw=write --bs=1M --direct=1 --output=/dev/null
fi
truncate -s 1G /dev/shm/iotrace-block-bench.img
loopdev=$(losetup --find --show /dev/shm/iotrace-block-bench.img)
disk_dev=$(df --output=source "$DISKFILE" | tail -1)

BIOLAT='tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
  @usecs = hist((nsecs - @start[args->dev, args->sector]) / 1000);
  delete(@start[args->dev, args->sector]); }'

spinners=()
if [[ $SPIN == 1 ]]; then
	for c in $(seq 0 $(($(nproc) - 1))); do
		taskset -c "$c" chrt --idle 0 sh -c 'while :; do :; done' &
		spinners+=($!)
	done
fi

tools=(bare iotrace-block iotrace-block-nowitness bpftrace)
[[ $have_blktrace -eq 1 ]] && tools+=(blktrace)
if [[ -n ${IOTRACE:-} ]] && "$IOTRACE" record --help >/dev/null 2>&1; then
	tools+=(iotrace-record)
fi

# start_tool TOOL BLOCKDEV: starts the tracer in the background, waits
# until it is attached, sets $tpid.
start_tool() {
	local tool=$1 dev=$2
	rm -f "$tmp/ready" "$tmp/tool.log"
	case $tool in
	bare) tpid="" ; return ;;
	iotrace-block | iotrace-block-nowitness)
		local nw=()
		[[ $tool == iotrace-block-nowitness ]] && nw=(-no-witness)
		"$tmp/block" -ready "$tmp/ready" "${nw[@]}" 2>"$tmp/tool.log" &
		tpid=$!
		for _ in $(seq 100); do [[ -f $tmp/ready ]] && break; sleep 0.1; done ;;
	bpftrace)
		bpftrace -e "$BIOLAT" >"$tmp/tool.log" 2>&1 &
		tpid=$!
		for _ in $(seq 100); do grep -q Attaching "$tmp/tool.log" 2>/dev/null && break; sleep 0.1; done
		sleep 0.5 ;;
	blktrace)
		blktrace -d "$dev" -o - >/dev/null 2>"$tmp/tool.log" &
		tpid=$!
		sleep 1 ;;
	iotrace-record)
		"$IOTRACE" record -o "$tmp/rec.iot" >"$tmp/tool.log" 2>&1 &
		tpid=$!
		sleep 2 ;;
	esac
}

stop_tool() {
	[[ -z $tpid ]] && return
	for _ in 1 2 3; do
		kill -INT "$tpid" 2>/dev/null || break
		for _ in $(seq 50); do kill -0 "$tpid" 2>/dev/null || break 2; sleep 0.1; done
	done
	kill -TERM "$tpid" 2>/dev/null || true
	wait "$tpid" 2>/dev/null || true
	if [[ $1 == iotrace-block* ]]; then sed 's/^/    /' "$tmp/tool.log" >&2; fi
}

# Per-program BPF run time (kernel.bpf_stats_enabled), restored on exit.
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; cleanup' EXIT
# Enabled only around the block tracer's own runs: the statistics cost two
# clock reads per program run, which would slow every other mode.
# bpf_ns: total run time and count of the block tracer's programs.
bpf_ns() {
	bpftool prog show --json | python3 -c '
import json, sys
names = {"block_bio_queue", "block_split", "block_rq_issue", "block_rq_comple", "block_rq_complete",
         "block_bio_compl", "block_bio_complete", "block_rq_requeu", "block_rq_requeue",
         "block_bio_backm", "block_bio_backmerge", "block_bio_front", "block_bio_frontmerge",
         "block_bio_remap"}
ns = sum(p.get("run_time_ns", 0) for p in json.load(sys.stdin) if p.get("name") in names)
print(ns)'
}

results=$tmp/results
: >"$results"
costs=$tmp/costs
: >"$costs"
for round in $(seq "$ROUNDS"); do
	for target in disk fast; do
		if [[ $target == disk ]]; then file=$DISKFILE dev=$disk_dev; else file=$loopdev dev=$loopdev; fi
		for tool in "${tools[@]}"; do
			if [[ $tool == iotrace-block ]]; then sysctl -qw kernel.bpf_stats_enabled=1; else sysctl -qw kernel.bpf_stats_enabled=0; fi
			start_tool "$tool" "$dev"
			fio --name=rr --filename="$file" --size=1G --rw=randread --bs=4k --direct=1 --cpus_allowed=0 \
				--ioengine=psync --iodepth=1 --numjobs=1 --time_based --runtime="$RUNTIME" \
				--randrepeat=0 --output-format=json --output="$tmp/fio.json"
			if [[ $tool == iotrace-block ]]; then
				ns=$(bpf_ns)
			fi
			stop_tool "$tool"
			if [[ $tool == iotrace-block ]]; then
				# BPF time per block event (events include other processes' bios).
				events=$(grep -o '^block: [0-9]* events' "$tmp/tool.log" | awk '{print $2}')
				echo "$target $ns ${events:-0}" >>"$costs"
				grep -o '[0-9]* ns/event' "$tmp/tool.log" | awk -v t="$target" '{print t, "user", $1}' >>"$costs"
			fi
			if [[ $tool == iotrace-block-nowitness ]]; then
				grep -o '[0-9]* ns/event' "$tmp/tool.log" | awk -v t="$target" '{print t, "user-nowitness", $1}' >>"$costs"
			fi
			iops=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"])' "$tmp/fio.json")
			echo "$target $tool $round $iops" >>"$results"
			echo "round $round $target $tool: $iops IOPS" >&2
		done
	done
done

python3 - "$results" "$costs" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
kernel, user = {}, {}
for l in open(sys.argv[2]):
    f = l.split()
    if f[1] == "user":
        user.setdefault(f[0], []).append(float(f[2]))
    elif f[1] == "user-nowitness":
        user.setdefault(f[0] + "-nowitness", []).append(float(f[2]))
    else:
        kernel.setdefault(f[0], []).append(float(f[1]) / max(float(f[2]), 1))
data = {}
for target, tool, _, iops in rows:
    data.setdefault(target, {}).setdefault(tool, []).append(float(iops))
for target, tools in data.items():
    bare = statistics.median(tools["bare"])
    print(f"\n{target}: O_DIRECT 4 KiB random reads, median of {len(tools['bare'])} runs")
    print(f"  {'tool':<16}{'IOPS':>10}{'us/IO':>9}{'slowdown':>10}{'added us/IO':>13}")
    for tool, v in tools.items():
        m = statistics.median(v)
        print(f"  {tool:<16}{m:>10.0f}{1e6/m:>9.2f}{bare/m:>10.3f}{1e6/m - 1e6/bare:>13.2f}")
    if target in kernel:
        k = statistics.median(kernel[target])
        u = statistics.median(user.get(target, [0]))
        print(f"  iotrace block CPU per I/O: BPF programs {k:.0f} ns (kernel.bpf_stats_enabled), "
              f"user-space reader {u:.0f} ns; vs the bare {1e3*1e6/bare:.0f} ns per I/O: "
              f"{100*k/(1e9/bare):.2f} % in the I/O path, {100*(k+u)/(1e9/bare):.2f} % of CPU in all")
    if target + "-nowitness" in user:
        print(f"  user-space reader without the completion witness: {statistics.median(user[target + '-nowitness']):.0f} ns per event")
EOF
