// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * floor.bpf.c: the cheapest tracing of the benchmark's system call, the
 * floor iotrace's cost is compared with: count enters and exits in a map.
 * Two variants, to compare the attach mechanisms iotrace could use:
 *   - per-syscall tracepoints (syscalls:sys_enter_pread64 / sys_exit_...),
 *   - raw tracepoints sys_enter / sys_exit (every system call) filtered
 *     by number through an array, as iotrace does.
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} traced SEC(".maps");

struct pt_regs___x86 {
	unsigned long orig_ax;
} __attribute__((preserve_access_index));

static __always_inline void hit(__u32 i)
{
	__u64 *c = bpf_map_lookup_elem(&hits, &i);
	if (c)
		(*c)++;
}

SEC("tracepoint/syscalls/sys_enter_pread64")
int tp_enter(void *ctx) { hit(0); return 0; }

SEC("tracepoint/syscalls/sys_exit_pread64")
int tp_exit(void *ctx) { hit(1); return 0; }

static __always_inline bool is_traced(long nr)
{
	if (nr < 0 || nr >= 1024)
		return false;
	__u32 k = nr;
	__u64 *v = bpf_map_lookup_elem(&traced, &k);
	return v && *v;
}

SEC("raw_tracepoint/sys_enter")
int raw_enter(struct bpf_raw_tracepoint_args *ctx)
{
	if (is_traced(ctx->args[1]))
		hit(0);
	return 0;
}

SEC("raw_tracepoint/sys_exit")
int raw_exit(struct bpf_raw_tracepoint_args *ctx)
{
	unsigned long nr = 0;
	bpf_probe_read_kernel(&nr, sizeof(nr), &((struct pt_regs___x86 *)ctx->args[0])->orig_ax);
	if (is_traced(nr))
		hit(1);
	return 0;
}
