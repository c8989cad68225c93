#!/usr/bin/env bash
# bench/serve.sh: the CPU cost of `iotrace serve` per event against
# `iotrace record`'s, in the same run. Builds iotrace, then ROUNDS times:
# the tracers of every mode start together (--comm dd, so that each gets
# the same events: the workload's), the workload runs — dd copying a
# cached file to /dev/null in 4 KiB blocks, again and again for SECS
# seconds — and the tracers stop (SIGINT). Each tracer's CPU time (user +
# system, /proc/PID/stat) is read just before the workload starts and a
# second after it ends (start-up and the final drain left out), and
# divided by the events it says it got. It prints, per mode, the median
# CPU ns per event and the median of the per-round ratios to record's,
# and the events each lost (the ratio means nothing if one lost events).
# The modes:
#   record -o FILE.iot          the yardstick
#   serve                       metrics only
#   serve -o FILE.iot           metrics and the same recording
#   serve --script iotop.star   metrics and a script's aggregations
# Running them together puts them under the same load at the same time:
# on a shared, noisy machine their ratio holds where times taken apart
# drift. Run as root from the repository root:
#   sudo bash bench/serve.sh               (ROUNDS=5 SECS=10)
set -euo pipefail
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-10}
[[ $(id -u) -eq 0 ]] || { echo "run as root" >&2; exit 1; }
dir=$(mktemp -d /var/tmp/iotrace-serve-bench.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; wait; rm -rf "$dir"' EXIT
go build -o "$dir/iotrace" ./cmd/iotrace
dd if=/dev/zero of="$dir/data" bs=1M count=64 status=none
cat "$dir/data" >/dev/null # cached

modes=(record serve serve-o serve-script)
args() { # mode
	case $1 in
	record) echo record -o "$dir/record.iot" ;;
	serve) echo serve --listen 127.0.0.1:0 ;;
	serve-o) echo serve --listen 127.0.0.1:0 -o "$dir/serve.iot" ;;
	serve-script) echo serve --listen 127.0.0.1:0 --script examples/scripts/iotop.star --script-output /dev/null ;;
	esac
}
ticks() { # pid: utime + stime in clock ticks
	local st
	read -r st <"/proc/$1/stat"
	local f=(${st##*) })
	echo $((f[11] + f[12]))
}
hz=$(getconf CLK_TCK)
events() { # stderr file: "N LOST" from the summary line
	sed -nE 's/.*(recorded|traced) ([0-9]+) events, ([0-9]+) events lost.*/\2 \3/p' "$1" | tail -1
}

declare -A ns lost
for ((r = 1; r <= ROUNDS; r++)); do
	rm -f "$dir"/*.iot
	pids=()
	for m in "${modes[@]}"; do
		# shellcheck disable=SC2046
		"$dir/iotrace" $(args "$m") --comm dd 2>"$dir/$m.stderr" >/dev/null &
		pids+=($!)
	done
	sleep 5 # attached
	c0=()
	for p in "${pids[@]}"; do c0+=("$(ticks "$p")"); done
	end=$((SECONDS + SECS))
	while ((SECONDS < end)); do dd if="$dir/data" of=/dev/null bs=4k status=none; done
	sleep 1
	c1=()
	for p in "${pids[@]}"; do c1+=("$(ticks "$p")"); done
	for i in "${!modes[@]}"; do
		m=${modes[$i]}
		kill -INT "${pids[$i]}"
		wait "${pids[$i]}" || { echo "$m exited with $?:" >&2; cat "$dir/$m.stderr" >&2; exit 1; }
		read -r n l <<<"$(events "$dir/$m.stderr")"
		[[ -n $n && $n -gt 0 ]] || { echo "$m printed no summary:" >&2; cat "$dir/$m.stderr" >&2; exit 1; }
		ns[$m]+="$(((c1[i] - c0[i]) * 1000000000 / hz / n)) "
		lost[$m]=$((${lost[$m]:-0} + l))
		echo "round $r $m: $n events ($l lost), $((c1[i] - c0[i])) ticks: $(((c1[i] - c0[i]) * 1000000000 / hz / n)) ns/event" >&2
	done
	pids=()
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf '| mode | CPU ns per event (median of %d rounds) | / record (median of the rounds'"'"' ratios) | events lost |\n|---|---|---|---|\n' "$ROUNDS"
read -ra base <<<"${ns[record]}"
for m in "${modes[@]}"; do
	read -ra v <<<"${ns[$m]}"
	ratios=""
	for i in "${!v[@]}"; do ratios+="$(awk -v a="${v[$i]}" -v b="${base[$i]}" 'BEGIN {printf "%.3f", a/b}') "; done
	printf '| `%s` | %s | %s | %s |\n' "$m" "$(echo "${ns[$m]}" | median)" "$(echo "$ratios" | median)" "${lost[$m]}"
done
