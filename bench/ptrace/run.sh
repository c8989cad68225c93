#!/usr/bin/env bash
# bench/ptrace/run.sh: the cost of the ptrace backend per traced call and
# per untraced call, side by side with strace. A C program (calls.c) times
# N pread64 of 4 KiB from a cached file (traced by every tracer here), then
# N getppid (recorded by none), bare, under `iotrace record --backend
# ptrace`, under `strace -f -o /dev/null` and under
# `strace --seccomp-bpf -f -o /dev/null` (both with -e trace=%file,%desc,
# the calls iotrace records: without --seccomp-bpf strace still stops at
# every call), in rounds A B C D, A B C D ...; prints the median ns per
# call of each mode and the ratios. Runs as any user:
#   bash bench/ptrace/run.sh        (ROUNDS=5, N=200000 by default)
set -euo pipefail
ROUNDS=${ROUNDS:-5}
N=${N:-200000}
for c in strace gcc go; do
	command -v $c >/dev/null || { echo "missing $c (scripts/setup installs it)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/iotrace" ./cmd/iotrace
gcc -O2 -o "$out/calls" bench/ptrace/calls.c
head -c 4096 /dev/urandom >"$out/file"
cat "$out/file" >/dev/null

modes=(bare iotrace-ptrace strace strace-seccomp)
run() { # mode kind
	local c=("$out/calls" "$2" "$N" "$out/file")
	case $1 in
	bare) "${c[@]}" ;;
	iotrace-ptrace) "$out/iotrace" record --backend ptrace -o "$out/t.iot" -- "${c[@]}" 2>/dev/null ;;
	strace) strace -f -o /dev/null -e trace=%file,%desc -- "${c[@]}" ;;
	strace-seccomp) strace --seccomp-bpf -f -o /dev/null -e trace=%file,%desc -- "${c[@]}" ;;
	esac
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for kind in traced untraced; do
	for ((r = 0; r < ROUNDS; r++)); do
		for m in "${modes[@]}"; do
			run "$m" "$kind" >>"$out/$kind.$m"
		done
	done
	echo "$kind calls ($([[ $kind == traced ]] && echo pread64 4 KiB || echo getppid)), N=$N, $ROUNDS rounds, median ns/call:"
	bare=$(median <"$out/$kind.bare")
	for m in "${modes[@]}"; do
		v=$(median <"$out/$kind.$m")
		awk -v m="$m" -v v="$v" -v b="$bare" 'BEGIN {printf "  %-16s %10.1f ns  (+%.1f ns, %.2fx bare)\n", m, v, v - b, v / b}'
	done
done
