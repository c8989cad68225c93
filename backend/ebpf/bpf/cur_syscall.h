/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * cur_syscall.h: the map shared by the syscall programs (engineer C,
 * iotrace.bpf.c) and the block programs (engineer D, blockio) to link a
 * bio to the system call that queued it.
 *
 * Protocol (one value per thread, in a slot of thread_slots or in the
 * task-local storage cur_syscall: see syscall_state_of below; freed when
 * the thread exits, so nothing per thread is left behind or capped):
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
 * The maps are defined (and owned) by the syscall object; the block object
 * declares the same maps and the loader replaces them with the syscall
 * object's maps (cilium/ebpf CollectionOptions.MapReplacements), so both
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

/* Where a thread's struct syscall_state lives. The system-call programs
 * look it up at both ends of every traced call, so its first home is a
 * slot of thread_slots, an array indexed by the thread's ID: a lookup
 * there is a few inlined instructions, where bpf_task_storage_get is a
 * helper call behind a recursion guard (28 ns a traced call more,
 * measured in place). A thread takes its slot at its first traced call (sys_enter, by
 * compare-and-swap on tid) and frees it when it exits (sched_process_exit);
 * a thread whose slot another live thread holds keeps its state in
 * cur_syscall instead, as does every thread that got its state elsewhere
 * (the asynchronous paths create it there). A slot names its thread by ID
 * and start time, so a slot whose thread's exit went unseen never passes
 * for a later thread given that ID. A non-leader thread that execs takes
 * the leader's ID and start time: sys_enter of its execve moves its state
 * to task storage first.
 * Only the system-call object takes and frees slots; the block object
 * only looks them up (syscall_state_of), through the same map. */
#define THREAD_SLOTS 8192 /* the map's size; the loader may set a smaller power of two */

struct thread_slot {
	__u32 tid;   /* the thread holding the slot; 0: free */
	__u32 pad;
	__u64 start; /* its start_boottime */
	__u64 regs;  /* its user registers (struct pt_regs *: the top of its kernel stack), noted by sys_enter; 0 when free */
	__u64 task;  /* its struct task_struct *, noted with regs */
	struct syscall_state st;
	__u8 pad2[24]; /* to three cache lines (the array mapped: values page-aligned), so two threads' slots share none */
};
_Static_assert(sizeof(struct thread_slot) == 192, "struct thread_slot fills three cache lines");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, THREAD_SLOTS);
	__type(key, __u32);
	__type(value, struct thread_slot);
} thread_slots SEC(".maps");

/* thread_slots' size less 1, set by the loader (a power of two less 1). */
volatile const __u32 cfg_thread_slot_mask = THREAD_SLOTS - 1;

struct task_struct;

/* thread_slot returns the slot of the thread with ID tid (maybe another
 * thread's, or free). */
static __always_inline struct thread_slot *thread_slot(__u32 tid)
{
	__u32 i = tid & cfg_thread_slot_mask;
	return bpf_map_lookup_elem(&thread_slots, &i);
}

/* held_slot returns the slot of the thread with ID tid and start time
 * start when that thread holds it, else NULL. */
static __always_inline struct thread_slot *held_slot(__u32 tid, __u64 start)
{
	struct thread_slot *s = thread_slot(tid);
	if (s && tid && s->tid == tid && s->start == start)
		return s;
	return NULL;
}

/* syscall_state_of returns the state of thread t, whose ID is tid and
 * start time start, or NULL when it has none. */
static __always_inline struct syscall_state *syscall_state_of(struct task_struct *t, __u32 tid, __u64 start)
{
	struct thread_slot *s = held_slot(tid, start);
	if (s)
		return &s->st;
	return bpf_task_storage_get(&cur_syscall, t, 0, 0);
}

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
