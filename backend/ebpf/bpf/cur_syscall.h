/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * cur_syscall.h: the map shared by the syscall programs (engineer C,
 * iotrace.bpf.c) and the block programs (engineer D, blockio) to link a
 * bio to the system call that queued it.
 *
 * Protocol:
 *   - sys_enter of a traced syscall writes cur_syscall[tid] = {id, 0, 0, 0}
 *     (id: the syscall event's ID, bit 63 clear).
 *   - block_bio_queue looks up cur_syscall[current tid]; when present it
 *     stores id as the bio's cause and atomically adds 1 to nr_bios and the
 *     bio's size to bio_bytes (__sync_fetch_and_add).
 *   - sys_exit reads nr_bios/bio_bytes into the syscall record
 *     (CausedIOs/CausedBytes) and deletes the entry.
 *
 * The map is defined (and owned) by the syscall object; the block object
 * declares the same map and the loader replaces it with the syscall
 * object's map (cilium/ebpf CollectionOptions.MapReplacements), so both
 * definitions below must stay identical. Include this header once per
 * object, after vmlinux-free type definitions (__u32/__u64) and
 * bpf_helpers.h.
 */
#ifndef IOTRACE_CUR_SYSCALL_H
#define IOTRACE_CUR_SYSCALL_H

#define CUR_SYSCALL_MAX_ENTRIES 65536

struct cur_syscall {
	__u64 id;        /* ID of the syscall event in progress on this thread */
	__u32 nr_bios;   /* bios queued by this thread during the syscall */
	__u32 pad;
	__u64 bio_bytes; /* bytes of those bios */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUR_SYSCALL_MAX_ENTRIES);
	__type(key, __u32);               /* tid (kernel pid) */
	__type(value, struct cur_syscall);
} cur_syscall SEC(".maps");

#endif /* IOTRACE_CUR_SYSCALL_H */
