/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * cur_syscall.h: the map shared by the syscall programs (engineer C,
 * iotrace.bpf.c) and the block programs (engineer D, blockio) to link a
 * bio to the system call that queued it.
 *
 * Protocol (the map is task-local storage: one value per thread, found
 * from the task itself in a few instructions, freed by the kernel when the
 * thread exits, so nothing per thread is left behind or capped):
 *   - sys_enter of a traced syscall sets the current thread's cause to
 *     {id, 0, 0, 0} (id: the syscall event's ID, bit 63 clear, never 0).
 *     The value is created at the thread's first traced call and
 *     rewritten in place after that: an id of 0 means no traced call is
 *     in progress.
 *   - block_bio_queue looks up the current thread's cause; when present
 *     with a non-zero id it stores id as the bio's cause and atomically
 *     adds 1 to nr_bios and the bio's size to bio_bytes
 *     (__sync_fetch_and_add). block_split does the same for a split
 *     child when the current thread is still in the parent's syscall.
 *   - sys_exit reads nr_bios/bio_bytes into the syscall record
 *     (CausedIOs/CausedBytes) and sets id to 0.
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

struct syscall_cause {
	__u64 id;        /* ID of the syscall event in progress on this thread */
	__u32 nr_bios;   /* bios queued by this thread during the syscall */
	__u32 submitter; /* the thread that submitted the asynchronous request id
			  * names, when this thread (an io_uring worker) does its
			  * I/O: the bios are attributed to it; 0 otherwise */
	__u64 bio_bytes; /* bytes of those bios */
};

/* The map's value: the cause counters first, then the syscall object's
 * own state of the call in flight (struct inflight in iotrace.bpf.c, which
 * asserts its size), kept in the same value so that each end of a system
 * call makes one storage lookup, not two. The block object sees it as
 * opaque bytes. */
#define SYSCALL_PRIVATE_SIZE 112

struct syscall_state {
	struct syscall_cause cause;
	__u8 call[SYSCALL_PRIVATE_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);                 /* a pidfd, from user space */
	__type(value, struct syscall_state);
} cur_syscall SEC(".maps");

/* Page-cache read I/O per file, for telling a read that waited for I/O
 * already in flight (read-ahead, or another reader's) from a cache hit.
 * The block object counts, per inode, the page-cache read bios in flight
 * and notes when the last one completed; the syscall object looks at both
 * when a read that slept for I/O and queued nothing ends
 * (SF_WAITED_IO). Shared like cur_syscall (owned by the syscall object,
 * replaced into the block object). An LRU map: an inode evicted while its
 * bios are in flight loses only that evidence. */
struct inode_io_key {
	__u64 ino;
	__u32 dev; /* kernel dev_t of the inode's file system */
	__u32 pad;
};

struct inode_io {
	__u32 inflight;  /* page-cache read bios of the inode in flight */
	__u32 pad;
	__u64 last_done; /* bpf_ktime_get_boot_ns() when the last one completed */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct inode_io_key);
	__type(value, struct inode_io);
} inode_io SEC(".maps");

/* Stacks (--stacks): one stack-trace map for both objects (owned by the
 * syscall object, replaced into the block object), so that a stack ID
 * means one stack in either's records. Frames are return addresses,
 * innermost first; an unused slot is 0. */
#define MAX_STACK_DEPTH 127
#define STACKS_USER 1
#define STACKS_KERNEL 2

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384); /* resized by the loader */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

#endif /* IOTRACE_CUR_SYSCALL_H */
