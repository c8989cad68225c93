package ebpf

// The BPF programs live in bpf/ (C sources in the package directory would
// break cgo-free builds). The generated iotrace_bpfel.go and .o are
// committed, so a plain go build needs no clang; run go generate after
// changing bpf/*.c or bpf/*.h (needs clang and libbpf-dev). bpf/sys_desc.h
// is written first, from the descriptor layout in syscalls.go. -mcpu=v3:
// the per-CPU record slots are reserved by compare-and-swap and, off x86,
// published by exchange (atomics of BPF ISA v3, Linux 5.12).
//go:generate go test -run TestSysDescHeader -update .
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel -tags linux -type inflight_dump iotrace bpf/iotrace.bpf.c -- -mcpu=v3 -O2 -g -Wall -Werror -idirafter /usr/include/x86_64-linux-gnu -idirafter /usr/include/aarch64-linux-gnu
