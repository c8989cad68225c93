#!/usr/bin/env bash
# bench/inplace/run.sh: parts of the eBPF backend's system-call path
# measured in place (bench/inplace/main_linux.go says how). Builds, in a
# copy of this tree, an iotrace whose BPF programs have the measurement
# switches compiled in (-DIOTRACE_BENCH_SWITCHES; clang and libbpf-dev, as
# go generate needs), then records the workload with it: iotrace on CPU 0,
# the workload on CPU 1. Run as root from the repository root:
#   sudo bash bench/inplace/run.sh            (switches 1 2 4: the clock
#                                             reads, the output, the prefetch)
#   sudo bash bench/inplace/run.sh 2 4        (those switches only)
# ROUNDS and CHUNK set the rounds and the calls per chunk (40, 10000).
set -euo pipefail
[[ $(id -u) -eq 0 ]] || { echo "run as root" >&2; exit 1; }
switches=("$@")
[[ ${#switches[@]} -gt 0 ]] || switches=(1 2 4)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$tmp"
(
	cd "$tmp/backend/ebpf"
	GOPACKAGE=ebpf go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel -tags linux -type inflight_dump iotrace bpf/iotrace.bpf.c -- \
		-DIOTRACE_BENCH_SWITCHES -mcpu=v3 -O2 -g -Wall -Werror -idirafter /usr/include/x86_64-linux-gnu -idirafter /usr/include/aarch64-linux-gnu >/dev/null
	cd "$tmp"
	CGO_ENABLED=0 go build -o "$tmp/iotrace" ./cmd/iotrace
	go build -o "$tmp/inplace" ./bench/inplace
)
taskset -c 0 "$tmp/iotrace" record -q -o "$tmp/t.iot" -- "$tmp/inplace" -cpu 1 -rounds "${ROUNDS:-40}" -chunk "${CHUNK:-10000}" "${switches[@]}"
