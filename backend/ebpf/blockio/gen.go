package blockio

// The BPF object is compiled with clang and committed (blockio_bpfel.go,
// blockio_bpfel.o), so a plain go build needs no clang. Regenerate after
// changing bpf/*.c or bpf/*.h (needs clang, llvm and libbpf-dev):
//
//	go generate ./backend/ebpf/blockio/

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux -target bpfel -type block_rec -type bio_info -type syscall_cause blockio bpf/blockio.bpf.c -- -I./bpf -I../bpf -O2 -g -Wall -Werror -idirafter /usr/include/x86_64-linux-gnu -idirafter /usr/include/aarch64-linux-gnu
