package main

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel -tags linux floor bpf/floor.bpf.c -- -O2 -g -Wall -Werror -idirafter /usr/include/x86_64-linux-gnu -idirafter /usr/include/aarch64-linux-gnu
