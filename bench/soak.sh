#!/usr/bin/env bash
# bench/soak.sh MINUTES: live recording under a mixed load for MINUTES
# (default 30), with the invariants checked at the end. Not run by CI.
#
# The load, in parallel loops until the end: fork bursts (200 x /bin/true
# a second), processes of names never seen before (50 a second, each
# reading a file: what bounds `serve`'s memory is its label limit, not how
# many names come and go), small-file loops (create, write, read, remove 500 files, then
# 0.5 s of rest), sqlite3 (200 autocommit inserts, 0.5 s of rest), fio
# random 4 KiB direct reads (psync and io_uring, 2,000 IOPS each), tar of
# /usr/include into the work directory and out again (2 s of rest), and
# sync every 5 s.
#
# The recorders, all at once under that load (side by side), by
# RECORDERS (default "rotate:30s ring:64M"): rotate:D is `record --rotate D`
# into a directory, ring:SIZE is `record --ring SIZE`, plain is `record`
# into one file, serve:TOP is `serve --top TOP` (metrics only, on a free
# 127.0.0.1 port; its table row has no files). Every 5 s the script samples each recorder's resident
# memory (VmRSS) and CPU time; at the end it stops each with one SIGINT and
# bench/soak (Go) checks: every file whole; the rotated files' events add
# up to what record printed; a flight recorder's kept + overwritten events
# are what it printed; the kernel's losses in the files are those printed;
# resident memory flat after the warm-up (WARMUP minutes, default a third
# of the run, at most 5), a flight recorder's at most its SIZE plus
# RING_SLACK MiB (default 128: what plain `record` holds besides the
# window, docs/architecture.md) and, beside a plain or rotating recorder,
# at most SIZE plus RING_OVER MiB (default 16) above that one's. It
# prints a table for docs/benchmarks.md.
#
# Run as root from the repository root:
#   sudo bash bench/soak.sh 30
#   sudo RECORDERS="plain ring:64M ring:256M" bash bench/soak.sh 5
#   sudo RECORDERS="plain serve:20" bash bench/soak.sh 60   (serve's memory)
# IOTRACE=PATH runs that binary instead of building ./cmd/iotrace.
# WORK (default /var/tmp/iotrace-soak, on a disk: not a tmpfs) holds the
# load's files and the recordings; it is removed at the end unless KEEP=1.
set -euo pipefail
MINUTES=${1:-30}
RECORDERS=${RECORDERS:-"rotate:30s ring:64M"}
WORK=${WORK:-/var/tmp/iotrace-soak}
[[ $(id -u) -eq 0 ]] || { echo "run as root" >&2; exit 1; }
for c in go fio sqlite3 tar; do
	command -v $c >/dev/null || { echo "missing $c (scripts/setup installs it)" >&2; exit 1; }
done
[[ $MINUTES =~ ^[0-9]+$ && $MINUTES -gt 0 ]] || { echo "usage: bench/soak.sh MINUTES" >&2; exit 2; }

rm -rf "$WORK"
mkdir -p "$WORK/load" "$WORK/out"
bin=$WORK/bin
mkdir -p "$bin"
if [[ -n ${IOTRACE:-} ]]; then cp "$IOTRACE" "$bin/iotrace"; else go build -o "$bin/iotrace" ./cmd/iotrace; fi
go build -o "$bin/soak" ./bench/soak
out=$WORK/out
end=$(($(date +%s) + MINUTES * 60))

pids=()   # the load's loops
recs=()   # recorder name=pid
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ ${KEEP:-0} != 1 ]]; then rm -rf "$WORK/load"; fi
}
trap cleanup EXIT

# The recorders first, so that they see the load from its start.
for r in $RECORDERS; do
	kind=${r%%:*}
	arg=${r#*:}
	case $kind in
	rotate) mkdir -p "$out/$r"; args=(record -o "$out/$r/" --rotate "$arg") ;;
	ring) args=(record --ring "$arg" -o "$out/$r.iot") ;;
	plain) args=(record -o "$out/$r.iot") ;;
	serve) args=(serve --listen 127.0.0.1:0 --top "$arg") ;;
	*) echo "unknown recorder $r (rotate:D, ring:SIZE, plain, serve:TOP)" >&2; exit 2 ;;
	esac
	"$bin/iotrace" "${args[@]}" 2>"$out/$r.stderr" >/dev/null &
	recs+=("$r=$!")
	echo "elapsed_s,rss_kb,cpu_ticks" >"$out/$r.csv"
done
sleep 5 # attached

loop() { while [[ $(date +%s) -lt $end ]]; do "$@" || true; done; }
forks() { for _ in $(seq 200); do /bin/true & done; wait; sleep 1; }
named=0
names() { # 50 processes, each of a name never seen before
	local d=$WORK/load/names
	mkdir -p "$d"
	for _ in $(seq 50); do
		named=$((named + 1))
		ln -s /bin/cat "$d/p$named" && "$d/p$named" /etc/hostname >/dev/null
	done
	rm -f "$d"/p*
	sleep 1
}
smallfiles() {
	local d=$WORK/load/small
	mkdir -p "$d"
	for i in $(seq 500); do echo "line $i" >"$d/f$i"; done
	cat "$d"/f* >/dev/null
	rm -f "$d"/f*
	sleep 0.5
}
db() { sqlite3 "$WORK/load/soak.db" "CREATE TABLE IF NOT EXISTS t(x); $(for i in $(seq 200); do printf 'INSERT INTO t VALUES(%d);' "$i"; done) DELETE FROM t;" >/dev/null; sleep 0.5; }
fiojob() {
	fio --name="soak-$1" --filename="$WORK/load/fio.dat" --size=256M --rw=randread --bs=4k --direct=1 \
		--ioengine="$1" --iodepth=4 --rate_iops=2000 --time_based --runtime=$((end - $(date +%s))) >/dev/null 2>&1
}
tarball() {
	tar cf "$WORK/load/inc.tar" -C /usr include 2>/dev/null
	mkdir -p "$WORK/load/untar"
	tar xf "$WORK/load/inc.tar" -C "$WORK/load/untar"
	rm -rf "$WORK/load/untar" "$WORK/load/inc.tar"
	sleep 2
}
syncs() { sync; sleep 5; }

dd if=/dev/zero of="$WORK/load/fio.dat" bs=1M count=256 conv=fsync status=none
loop forks & pids+=($!)
loop names & pids+=($!)
loop smallfiles & pids+=($!)
loop db & pids+=($!)
fiojob psync & pids+=($!)
fiojob io_uring & pids+=($!)
loop tarball & pids+=($!)
loop syncs & pids+=($!)

# sample PID prints its resident kB and CPU ticks (utime + stime), with
# shell builtins only: no process to start on a loaded machine.
sample() {
	local k v rest rss="" st
	while read -r k v rest; do
		[[ $k == VmRSS: ]] && { rss=$v; break; }
	done <"/proc/$1/status" || return 1
	read -r st <"/proc/$1/stat" || return 1
	local f=(${st##*) }) # fields 3 and on
	echo "$rss,$((f[11] + f[12]))"
}
SECONDS=0
while [[ $SECONDS -lt $((MINUTES * 60)) ]]; do
	now=$SECONDS
	for rp in "${recs[@]}"; do
		s=$(sample "${rp#*=}" 2>/dev/null) && echo "$now,$s" >>"$out/${rp%%=*}.csv"
	done
	sleep 5
done

for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true
pids=()
for rp in "${recs[@]}"; do kill -INT "${rp#*=}"; done
status=0
for rp in "${recs[@]}"; do
	wait "${rp#*=}" || { echo "recorder ${rp%%=*} exited with $?" >&2; status=1; }
done
"$bin/soak" -dir "$out" -minutes "$MINUTES" -warmup "${WARMUP:-0}" -ring-slack "${RING_SLACK:-128}" -ring-over "${RING_OVER:-16}" $RECORDERS || status=1
if [[ ${KEEP:-0} != 1 ]]; then rm -rf "$out"/*/ "$out"/*.iot; fi
echo "samples and messages: $out"
exit $status
