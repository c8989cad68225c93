// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * iotrace.bpf.c: file system calls paired in the kernel, plus the process
 * life cycle (fork, exec, exit) and io_uring requests.
 *
 * Two BTF tracepoint programs, on sys_enter and sys_exit, see every system
 * call; the array sys_kinds, indexed by syscall number and filled by the
 * loader from backend/ebpf/systable, says which are traced, which
 * arguments are paths and what else to read (sys_desc.h); the rest return
 * after one array lookup.
 * sys_enter stores the arguments in the thread's state (inflight, in its
 * slot of thread_slots or its task-local storage: cur_syscall.h; made at
 * the thread's first traced call, reused in place, freed with the
 * thread); sys_exit
 * sends one struct syscall_rec with both ends. Path arguments are read at enter and sent ahead in a
 * struct path_rec; a path whose page is not resident at enter is read
 * again at exit.
 *
 * Build: go generate ./backend/ebpf (bpf2go; needs clang and libbpf-dev).
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "records.h"
#include "cur_syscall.h"
#include "pagecache.h"
#include "sys_desc.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* ---- Kernel types, only the fields used (CO-RE relocated) ---- */

struct file;
struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));
struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));
struct block_device;
struct super_block {
	__u32 s_dev;
	unsigned long s_magic;
	struct block_device *s_bdev;
} __attribute__((preserve_access_index));
struct inode {
	unsigned short i_mode;
	unsigned long i_ino;
	struct super_block *i_sb;
	__u32 i_rdev; /* dev_t */
} __attribute__((preserve_access_index));
struct file {
	struct inode *f_inode;
	unsigned int f_flags;
	long long f_pos;
} __attribute__((preserve_access_index));
struct fs_struct;
struct signal_struct {
	struct {
		int counter;
	} live;
} __attribute__((preserve_access_index));
struct mm_struct {
	unsigned long arg_start;
	unsigned long arg_end;
	unsigned long start_code;
} __attribute__((preserve_access_index));
struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long vm_pgoff;
	struct file *vm_file;
} __attribute__((preserve_access_index));
struct task_struct {
	unsigned int flags;
	unsigned int in_iowait : 1;
	int pid;
	int tgid;
	struct files_struct *files;
	struct fs_struct *fs;
	struct signal_struct *signal;
	struct mm_struct *mm;
	__u64 start_boottime;
	int exit_code;
	char comm[16];
} __attribute__((preserve_access_index));
struct linux_binprm {
	const char *filename;
} __attribute__((preserve_access_index));
struct io_cqe {
	__u64 user_data;
	__s32 res;
	int fd;
} __attribute__((preserve_access_index));
struct io_cmd_data {
	__u64 data[8];
};
struct io_kiocb {
	struct io_cmd_data cmd;
	__u8 opcode;
	__u64 flags; /* io_req_flags_t */
	struct io_cqe cqe;
} __attribute__((preserve_access_index));
/* include/uapi/linux/io_uring.h: what io_uring_complete passes since
 * 6.9 (see uring_complete) */
struct io_uring_cqe {
	__u64 user_data;
	__s32 res;
	__u32 flags;
} __attribute__((preserve_access_index));
#define REQ_F_FIXED_FILE 1 /* 1 << REQ_F_FIXED_FILE_BIT (0) */
struct kiocb {
	long long ki_pos;
	int ki_flags;
} __attribute__((preserve_access_index));
struct io_event {
	__u64 data;
	__u64 obj; /* the user address of the request's struct iocb */
	__s64 res;
	__s64 res2;
} __attribute__((preserve_access_index));
/* fs/aio.c: the kiocb of a read or write is at the start of its
 * aio_kiocb (a union's first member). */
struct aio_kiocb {
	struct io_event ki_res;
} __attribute__((preserve_access_index));
struct io_rw {
	struct kiocb kiocb;
	__u64 addr;
	__u32 len;
} __attribute__((preserve_access_index));

/* struct pt_regs per architecture (CO-RE flavours: only the one matching
 * the running kernel has its fields; the other branch is dead code). */
struct pt_regs___x86 {
	unsigned long r10, r9, r8, ax, cx, dx, si, di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned short cs;
} __attribute__((preserve_access_index));
struct pt_regs___arm64 {
	__u64 regs[31];
	__u64 pc;
	__u64 pstate;
	__s32 syscallno;
} __attribute__((preserve_access_index));
struct pt_regs;

#define X86_USER32_CS 0x23   /* a 32-bit (compat) task on x86-64 */
#define ARM64_PSR_MODE32 0x10 /* an AArch32 (compat) task on arm64 */

#define IORING_CQE_F_MORE (1U << 1) /* a multishot request stays armed */

/* ---- Syscall descriptor layout (CK_*): bpf/sys_desc.h, generated from
 * syscalls.go ---- */

#define S_IFMT 00170000
#define S_IFREG 0100000
#define TMPFS_MAGIC 0x01021994
#define RAMFS_MAGIC 0x858458f6
#define IOV_CAP 16
#define MAP_ANONYMOUS 0x20
#define F_DUPFD 0
#define F_SETFD 2
#define F_DUPFD_CLOEXEC 1030
#define F_GETLK 5
#define F_SETLK 6
#define F_SETLKW 7
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38

static __always_inline bool fcntl_lock(__u64 cmd)
{
	return cmd == F_GETLK || cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_GETLK ||
	       cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
}

/* ---- Configuration, set by the loader ---- */
volatile const __u32 cfg_self_tgid;     /* never traced */
volatile const __u8 cfg_filter_pids;    /* only tgids in pids */
volatile const __u8 cfg_follow_forks;   /* add children of traced processes to pids */
volatile const __u8 cfg_follow_self;    /* add children of cfg_self_tgid (the traced command) */
volatile const __u8 cfg_filter_comm;    /* only comms in comms */
volatile const __u8 cfg_cause;          /* maintain cur_syscall for block I/O cause links */
volatile const __u64 cfg_wakeup_bytes;  /* wake the reader when this much data is waiting */
volatile const __u8 cfg_stacks;         /* STACKS_USER | STACKS_KERNEL (cur_syscall.h) */
volatile const __u32 cfg_page_shift = 12; /* log2 of the page size (page-cache provenance) */
volatile const __u8 cfg_unwind;         /* user stacks by unwind tables (unwind.h), not frame pointers */
/* The argument layouts of BTF tracepoints that changed between kernels,
 * read by the loader from the kernel's btf_trace_<name> (tplayout_linux.go). */
volatile const __u8 cfg_uring_cqe;      /* io_uring_complete(ctx, req, struct io_uring_cqe *) */
volatile const __u8 cfg_evict_page;     /* mm_filemap_delete_from_page_cache(struct page *) */
volatile const __u32 cfg_slot_shift;    /* log2 of the record slots per CPU; 0: none (all records to rb) */
volatile const __u8 cfg_tso;            /* the CPU keeps stores in order (x86): slots published by a plain store */

/* bpf_rdonly_cast turns a kernel address read as a number into a typed
 * pointer whose fields are plain loads (kfunc, Linux 6.2). */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

/* ---- Maps ---- */
#define MAX_SYSCALL_NR 1024

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALL_NR);
	__type(key, __u32); /* syscall number of the kernel's native ABI */
	__type(value, __u64); /* descriptor: kind, path arguments, CK_* flags */
} sys_kinds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the loader */
} rb SEC(".maps");

/* Per-CPU record slots: the syscall records that need nothing sent ahead
 * of them (no path, no stack) go to a ring of slots of their CPU rather
 * than to rb. Sending through rb cost about 300 ns a call here (against a
 * variant sending nothing): its reserve takes one lock for all CPUs, its
 * reserve and commit each wait for the stores before them to reach the
 * cache, and its positions' cache lines bounce between the writing CPU
 * and the reader's. A slot is written with plain stores and,
 * on x86 (whose stores are seen in order), published with a plain store
 * too; the reader's position is read only when the writer's copy of it
 * says the ring is full. A record that finds its CPU's ring full goes to
 * rb (counted): the rings stay small (4,096 slots at most: memory), rb
 * absorbs a reader that falls behind. The reader (package
 * backend/ebpf/slots) reads the slots in place, woken by a REC_KICK in rb
 * every quarter ring (unless it says it polls, while they fill), and
 * merges them with rb's records by time (package backend/ebpf/reorder).
 *
 * A CPU's slots are a ring: position p is slot p mod n. A slot's state is
 * p + 1 once the record of position p is in it (0 at creation, an older
 * lap's position after). The writer reserves p by compare-and-swap on its
 * CPU's head, so two writers on one CPU (a program preempted, on a kernel
 * that runs these tracepoints preemptibly) never share a slot; it takes
 * p only while p - n is below the reader's tail (slot_tails, written by
 * the reader once it is done with a slot): a full ring overwrites
 * nothing. */
struct slot {
	__u64 state;
	struct syscall_rec rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set by the loader: possible CPUs << cfg_slot_shift */
	__type(key, __u32);
	__type(value, struct slot);
} slots SEC(".maps");

/* The reader's position in each CPU's slots, one cache line per CPU,
 * and whether it polls: while the slots fill it looks at them on a timer
 * and sets polling, and the writers then do not wake it unless three
 * quarters of the ring wait for it (a poll late). A writer that skips its kick as the
 * reader stops polling wakes it at the next quarter ring: the ring holds
 * four. */
struct slot_tail {
	__u64 tail;
	__u64 polling;
	__u64 pad[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* set by the loader: possible CPUs */
	__type(key, __u32);
	__type(value, struct slot_tail);
} slot_tails SEC(".maps");

/* The writer's side of a CPU's slots. */
struct slot_head {
	__u64 head; /* next position */
	__u64 tail; /* the reader's tail when last read */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slot_head);
} slot_heads SEC(".maps");

struct inflight {
	__u64 id;
	__u64 ts;
	__u64 args[6];
	__u64 size;
	__s64 pos;
	__u64 ino;
	__u32 dev;
	__u32 fflags;
	__u32 cpu;
	__u32 pid;
	__u16 kind;
	__u16 sflags;
	__u32 comm_sent; /* the thread's comm went out in a record (cleared on exec and rename) */
};

/* The system call in flight on each thread lives in the thread's state
 * (a slot of thread_slots or its task-local storage, see cur_syscall.h),
 * next to the cause counters the block programs update: made at the
 * thread's first traced call, reused in place (kind 0: none in flight),
 * freed with the thread. */
_Static_assert(sizeof(struct inflight) == SYSCALL_PRIVATE_SIZE, "struct inflight must fill syscall_state.call");

struct thread_state {
	struct syscall_cause cause;
	struct inflight call;
};
_Static_assert(sizeof(struct thread_state) == sizeof(struct syscall_state), "thread_state is syscall_state");

/* thread_state returns thread t's state, NULL when it has none. */
static __always_inline struct thread_state *thread_state(struct task_struct *t)
{
	return (struct thread_state *)syscall_state_of(t, t->pid, t->start_boottime);
}

static __always_inline void count(__u32 idx);

/* thread_state_new makes the state of thread t, which has none: in its
 * slot when claim and the slot is free, else in its task-local storage.
 * A free slot is clean (thread_slot_release): the slot is published, its
 * start time written, last. NULL when neither could be had (memory). */
static __always_inline struct thread_state *thread_state_new(struct task_struct *t, bool claim)
{
	__u32 tid = t->pid;
	struct thread_slot *s = claim ? thread_slot(tid) : NULL;
	if (s && tid && __sync_val_compare_and_swap(&s->tid, 0, tid) == 0) {
		asm volatile("" ::: "memory");
		s->start = t->start_boottime;
		return (struct thread_state *)&s->st;
	}
	count(C_STATE_STORAGE);
	return bpf_task_storage_get(&cur_syscall, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* thread_slot_release cleans and frees slot s, held by the current
 * thread (which exits, or execs as a non-leader thread). */
static __always_inline void thread_slot_release(struct thread_slot *s)
{
	struct thread_state *st = (struct thread_state *)&s->st;
	s->start = 0;
	s->regs = 0;
	s->task = 0;
	st->cause.id = 0;
	st->cause.nr_bios = 0;
	st->cause.submitter = 0;
	st->cause.bio_bytes = 0;
	st->call.kind = 0;
	st->call.comm_sent = 0;
	__sync_lock_test_and_set(&s->tid, 0); /* after the other stores */
}

/* thread_state_unslot moves the state of the current thread t, ID tid,
 * from its slot, when it holds one, to its task-local storage: a
 * non-leader thread about to exec, which will take the leader's ID and
 * start time (the kernel's de_thread) while its task (the key of task
 * storage) stays. Its execve pairs and stays the cause of its block I/O,
 * exec fails or not. When the storage cannot be had (memory) the slot is
 * freed all the same, its state dropped, and NULL returned: a slot must
 * not outlive its thread's ID. */
static __always_inline struct thread_state *thread_state_unslot(struct task_struct *t, __u32 tid, struct thread_state *st)
{
	struct thread_slot *s = held_slot(tid, t->start_boottime);
	if (!s)
		return st; /* not in a slot */
	struct thread_state *n = bpf_task_storage_get(&cur_syscall, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (n) {
		count(C_STATE_STORAGE);
		*n = *st;
	}
	thread_slot_release(s);
	return n;
}

/* The thread slot each CPU noted last (at a sys_enter that found no hint
 * for its thread), for sys_enter and sys_exit to find the thread's state
 * without asking for the task (bpf_get_current_task_btf: a helper call,
 * and a return through this machine's return thunk). The hint is checked,
 * not trusted: a slot is the current thread's when it holds the pt_regs
 * the program was given, which name one live thread (they sit at the top
 * of its kernel stack), written by that thread and cleared when the slot
 * is freed; and when the task noted in it still has the slot's ID and
 * start time (a slot left by a thread whose exit or exec went unseen, its
 * stack since another's, never passes). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32); /* index in thread_slots */
} slot_hints SEC(".maps");

/* slot_hint_note, at sys_enter of a call recorded in slot s (index
 * tid & mask) by task t, notes the call's pt_regs and t in s, and s in
 * this CPU's hint. */
static __always_inline void slot_hint_note(struct thread_slot *s, __u32 tid, struct pt_regs *regs, struct task_struct *t)
{
	__u32 zero = 0;
	__u32 *h = bpf_map_lookup_elem(&slot_hints, &zero);
	if (!h)
		return;
	s->regs = (__u64)regs;
	s->task = (__u64)t;
	*h = tid & cfg_thread_slot_mask;
}

/* slot_hinted returns the current thread's slot when this CPU's hint
 * names it (it holds the pt_regs the program was given), and in *task the
 * task noted in it, read-only; else NULL. */
static __always_inline struct thread_slot *slot_hinted(struct pt_regs *regs, struct task_struct **task)
{
	__u32 zero = 0;
	__u32 *h = bpf_map_lookup_elem(&slot_hints, &zero);
	if (!h)
		return NULL;
	__u32 i = *h;
	struct thread_slot *s = bpf_map_lookup_elem(&thread_slots, &i);
	if (!s || !s->tid || s->regs != (__u64)regs)
		return NULL;
	struct task_struct *t = bpf_rdonly_cast((void *)s->task, bpf_core_type_id_kernel(struct task_struct));
	if ((__u32)t->pid != s->tid || t->start_boottime != s->start)
		return NULL;
	*task = t;
	return s;
}

/* struct current is the thread a system-call program runs for. */
struct current {
	struct thread_state *st;  /* its state, NULL when it has none */
	struct thread_slot *hint; /* its slot, when found from the CPU's hint */
	struct task_struct *task; /* its task: read-only when found from the hint */
	__u32 tgid, tid;
};

/* current_of finds the current thread at either end of a system call
 * given regs: from the CPU's hint (no helper call), else through its
 * task (its IDs from the task's fields: two loads). */
static __always_inline void current_of(struct pt_regs *regs, struct current *c)
{
	struct thread_slot *hs = slot_hinted(regs, &c->task);
	c->hint = hs;
	if (hs) {
		c->st = (struct thread_state *)&hs->st;
		c->tid = hs->tid;
		c->tgid = c->st->call.pid;
		return;
	}
	c->task = bpf_get_current_task_btf();
	c->tgid = c->task->tgid;
	c->tid = c->task->pid;
	c->st = thread_state(c->task);
}

/* thread_slot_free frees the slot of an exiting thread, ID tid and start
 * time start, when it holds one. */
static __always_inline void thread_slot_free(__u32 tid, __u64 start)
{
	struct thread_slot *s = held_slot(tid, start);
	if (s)
		thread_slot_release(s);
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} pids SEC(".maps");

struct comm_key {
	char comm[COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct comm_key);
	__type(value, __u8);
} comms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct path_rec);
} path_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct exec_rec);
} exec_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_rec);
} stack_scratch SEC(".maps");


struct uring_inflight {
	__u64 id;
	__u64 ts;
	__u64 user_data;
	__s64 off;
	__u32 pid, tid;
	__u32 cpu;
	__s32 fd;
	__u32 len;
	__u8 opcode;
	__u8 caused;
	__u8 uflags; /* enum uring_flags */
	__u8 pad;
	char comm[COMM_LEN];
	__u64 bio_bytes;
	__u32 nr_bios;
	__u32 dev;
	__u64 ino;
	__u32 fflags;
	__s32 ustack;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct io_kiocb * */
	__type(value, struct uring_inflight);
} uring_inflight SEC(".maps");

struct aio_key {
	__u64 iocb; /* user address of the struct iocb */
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct aio_key);
	__type(value, struct aio_rec); /* filled at submission; dur and res at reaping */
} aio_inflight SEC(".maps");

/* Processes with AIO requests in aio_inflight (maybe): their exit sends
 * what was never reaped. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} aio_tgids SEC(".maps");

static __always_inline void aio_exit(__u32 tgid);

/* ---- Helpers ---- */

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);
	if (c)
		(*c)++;
}

static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);
	if (c)
		*c += n;
}

static __always_inline bool want(__u32 tgid)
{
	if (tgid == cfg_self_tgid)
		return false;
	if (cfg_filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return false;
	if (cfg_filter_comm) {
		struct comm_key k = {};
		bpf_get_current_comm(k.comm, sizeof(k.comm));
		if (!bpf_map_lookup_elem(&comms, &k))
			return false;
	}
	return true;
}

/* next_id returns a trace-unique, non-zero event ID with bit 63 clear. */
static __always_inline __u64 next_id(__u32 cpu)
{
	__u32 zero = 0;
	__u64 *s = bpf_map_lookup_elem(&seq, &zero);
	if (!s)
		return 0;
	*s += 1;
	return ((__u64)(cpu & 0x7fff) << 48) | (*s & 0xffffffffffffULL);
}

static __always_inline __u64 wakeup_flags(void)
{
	if (bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) >= cfg_wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline __u64 arg(const __u64 *args, __u32 i)
{
	switch (i) {
	case 0: return args[0];
	case 1: return args[1];
	case 2: return args[2];
	case 3: return args[3];
	case 4: return args[4];
	case 5: return args[5];
	}
	return 0;
}

/* UNTRUSTED(p) is p as a read-only pointer (the cast is inlined to a
 * move). Loading a pointer field through a trusted BTF pointer makes the
 * verifier look up the field's "__safe_trusted" types by name, a linear
 * search of the kernel's BTF each time the load is verified: that made
 * sys_enter's verification 4x slower (22 ms against 6 ms, start-up of
 * issue 28). Loads through a read-only pointer are the same loads. */
#define UNTRUSTED(p) ((typeof(p))bpf_rdonly_cast((p), bpf_core_type_id_kernel(typeof(*(p)))))

/* A kernel type whose only member is one pointer: an entry of the fd array
 * read through it is a plain load (see fd_file). */
struct llist_node {
	struct llist_node *next;
} __attribute__((preserve_access_index));

/* fd_file returns the struct file of fd in task t, or NULL. Every load is a
 * plain one through a read-only pointer, the fd array's entry too: the
 * entry's address, at a variable index, is cast to a one-pointer type.
 * (bpf_probe_read_kernel there cost about 20 ns a call: a helper call and
 * copy_from_kernel_nofault.) */
static __always_inline struct file *fd_file(struct task_struct *task, __s64 fd)
{
	if (fd < 0)
		return NULL;
	struct task_struct *t = UNTRUSTED(task);
	struct files_struct *files = t->files;
	if (!files)
		return NULL;
	struct fdtable *fdt = files->fdt;
	if (!fdt)
		return NULL;
	if ((__u64)fd >= fdt->max_fds)
		return NULL;
	struct llist_node *e = bpf_rdonly_cast(&fdt->fd[fd], bpf_core_type_id_kernel(struct llist_node));
	struct file *f = (struct file *)e->next;
	if (!f)
		return NULL;
	return bpf_rdonly_cast(f, bpf_core_type_id_kernel(struct file));
}

/* file_info fills v's file fields from fd of task (the current one). */
static __always_inline void file_info(struct task_struct *task, struct inflight *v, __s64 fd, bool pos)
{
	struct file *f = fd_file(task, fd);
	if (!f)
		return;
	struct inode *ino = f->f_inode;
	if (ino) {
		v->ino = ino->i_ino;
		if ((ino->i_mode & S_IFMT) == S_IFREG)
			v->sflags |= SF_REG;
		struct super_block *sb = ino->i_sb;
		if (sb) {
			__u32 dev = sb->s_dev;
			/* keeps clang from sharing this load with a load of
			 * another pointer type (the verifier refuses that) */
			asm volatile("" : "+r"(dev));
			v->dev = dev;
			if (sb->s_bdev)
				v->sflags |= SF_BDEV_FS;
			else if (sb->s_magic == TMPFS_MAGIC || sb->s_magic == RAMFS_MAGIC)
				v->sflags |= SF_MEM_FS;
		}
	}
	v->fflags = f->f_flags;
	if (pos)
		v->pos = f->f_pos;
	v->sflags |= SF_HAVE_FILE;
}

/* emit_path reads the user string at up and sends it as a path record.
 * It returns 0 when sent (or lost to a full ring buffer, which is counted)
 * and a negative errno when the string could not be read. */
static __always_inline long emit_path(struct inflight *v, __u32 tid, __u8 index, __u64 up, __u8 late)
{
	__u32 zero = 0;
	struct path_rec *p = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!p)
		return 0;
	long n = bpf_probe_read_user_str(p->path, sizeof(p->path), (const void *)up);
	if (n < 0)
		return n;
	if (n > PATH_CAP)
		n = PATH_CAP;
	p->h.type = REC_PATH;
	p->h.pad = 0;
	p->h.kind = v->kind;
	p->h.cpu = v->cpu;
	p->h.time = v->ts;
	p->id = v->id;
	p->tid = tid;
	p->len = n;
	p->index = index;
	p->late = late;
	__u64 size = offsetof(struct path_rec, path) + (__u64)n;
	if (size > sizeof(*p))
		size = sizeof(*p);
	if (bpf_ringbuf_output(&rb, p, size, wakeup_flags()) < 0)
		count(C_LOST_PATH);
	return 0;
}

#define EEXIST 17

/* user_stack returns the calling code's stack ID in the stacks map; when
 * its bucket holds another stack (-EEXIST), it sends the frames inline as
 * a stack_rec for event id, ahead of the event's record, and still
 * returns -EEXIST (the record says so, user space pairs them). */
static __always_inline __s32 user_stack(void *ctx, __u64 id, __u32 cpu)
{
	__s32 sid = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (sid != -EEXIST)
		return sid;
	__u32 zero = 0;
	struct stack_rec *sr = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!sr)
		return sid;
	long n = bpf_get_stack(ctx, sr->ips, sizeof(sr->ips), BPF_F_USER_STACK);
	if (n <= 0)
		return sid;
	sr->h.type = REC_STACK;
	sr->h.pad = 0;
	sr->h.kind = 0;
	sr->h.cpu = cpu;
	sr->h.time = 0;
	sr->id = id;
	sr->nr = n / 8;
	sr->stop = 255; /* a frame-pointer walk: why it ended is not known */
	__u64 size = offsetof(struct stack_rec, ips) + (__u64)n;
	if (size > sizeof(*sr))
		size = sizeof(*sr);
	if (bpf_ringbuf_output(&rb, sr, size, wakeup_flags()) < 0)
		count(C_LOST_STACK);
	return sid;
}

#include "unwind.h"
#include "ustack_send.h"

/* calling_stack returns the calling code's user stack for event id (0:
 * an asynchronous request's submission, whose stack is never sent ahead
 * of an event): walked with unwind tables (unwind.h) or, without them,
 * by frame pointers (the kernel's walk). */
static __always_inline __s32 calling_stack(void *ctx, __u64 id, __u32 cpu)
{
	if (cfg_unwind)
		return unwind_user(id, cpu);
	if (id)
		return user_stack(ctx, id, cpu);
	return bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
}

/* ---- Measurement switches (bench/inplace) ---- */

/* Compiled in only with -DIOTRACE_BENCH_SWITCHES (bench/inplace/run.sh):
 * user space flips them in bench_switches while a workload runs, chunk by
 * chunk, so that a part of the system-call path is measured in place,
 * against itself a few milliseconds apart (whole runs side by side are
 * within 3-5 % of each other on a shared machine). Without the define
 * each switch is the constant 0 and the code it guards is the only code. */
enum bench_switch_bits {
	BENCH_NO_CLOCK = 1,    /* no clock read at enter or exit (times are wrong) */
	BENCH_NO_OUTPUT = 2,   /* the record written to one scratch value, never sent */
	BENCH_NO_PREFETCH = 4, /* no slot prefetch at enter */
	BENCH_PLAIN_HEAD = 8,  /* the slot's position taken by a plain store, not a CAS (unsafe when a call is preempted there) */
	BENCH_BODY = 16,       /* sys_enter and sys_exit return once the call is found traced: nothing recorded */
};

#ifdef IOTRACE_BENCH_SWITCHES
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_switches SEC(".maps");

struct bench_slot {
	__u64 state;
	struct syscall_rec rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_slot);
} bench_scratch SEC(".maps");

static __always_inline __u32 bench_switch(__u32 bit)
{
	__u32 zero = 0;
	__u32 *v = bpf_map_lookup_elem(&bench_switches, &zero);
	return v ? *v & bit : 0;
}

static __always_inline void *bench_scratch_slot(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&bench_scratch, &zero);
}
#else
#define bench_switch(bit) 0
#define bench_scratch_slot() NULL
#endif

/* ---- Per-CPU record slots ---- */

/* slot_reserve returns a free slot of this CPU for the next position
 * (*pos), or NULL when the ring is full (the reader a lap behind). */
static __always_inline struct slot *slot_reserve(__u32 cpu, __u64 *pos)
{
	__u32 zero = 0;
	struct slot_head *h = bpf_map_lookup_elem(&slot_heads, &zero);
	if (!h)
		return NULL;
	__u32 shift = cfg_slot_shift & 31;
	__u64 n = 1ULL << shift;
	for (int i = 0; i < 4; i++) {
		__u64 p = *(volatile __u64 *)&h->head;
		if (p - h->tail >= n) {
			struct slot_tail *t = bpf_map_lookup_elem(&slot_tails, &cpu);
			if (!t)
				return NULL;
			h->tail = *(volatile __u64 *)&t->tail;
			if (p - h->tail >= n)
				return NULL;
		}
		/* looked up before p is taken: a position taken is always
		 * published (the reader waits at one that is not) */
		__u32 idx = (cpu << shift) + (__u32)(p & (n - 1));
		struct slot *s = bpf_map_lookup_elem(&slots, &idx);
		if (!s)
			return NULL;
		if (bench_switch(BENCH_PLAIN_HEAD))
			h->head = p + 1;
		else if (__sync_val_compare_and_swap(&h->head, p, p + 1) != p)
			continue; /* another writer on this CPU took p */
		/* every quarter ring, wake the reader, unless it polls and
		 * less than three quarters wait for it (the hold-back of the
		 * merge and a poll keep about half the ring at 1 call a µs;
		 * more: a poll came late) */
		if (!(p & ((n >> 2) - 1))) {
			struct slot_tail *t = bpf_map_lookup_elem(&slot_tails, &cpu);
			bool kick = true;
			if (t) {
				h->tail = *(volatile __u64 *)&t->tail;
				kick = !*(volatile __u64 *)&t->polling || p - h->tail >= n - (n >> 2);
			}
			if (kick) {
				struct kick_rec k = { .h = { .type = REC_KICK, .cpu = cpu } };
				bpf_ringbuf_output(&rb, &k, sizeof(k), BPF_RB_FORCE_WAKEUP);
			}
		}
		*pos = p;
		return s;
	}
	return NULL;
}

/* slot_candidate reports whether a call's record goes to the slots: one
 * with a path (sent ahead of it in rb) or a user stack goes to rb too,
 * behind them. */
static __always_inline bool slot_candidate(__u64 cookie)
{
	return cfg_slot_shift && CK_PATH0(cookie) == NO_ARG && CK_PATH1(cookie) == NO_ARG &&
	       !(cfg_stacks & STACKS_USER);
}

/* slot_prefetch loads, at a call's enter, the lines of the slot its
 * record will most likely take at exit (this CPU's head), so that they
 * are in this CPU's cache by then: the slot was last written a lap ago
 * and read by the reader since. Measured in place (bench/inplace,
 * BENCH_NO_PREFETCH) on a 2-vCPU KVM guest: 11 to 69 ns less per call in
 * four runs, never more. Loads only: the slot may still be the reader's,
 * and another call on this CPU may take it first (then the loads were
 * only wasted). */
static __always_inline void slot_prefetch(__u32 cpu)
{
	__u32 zero = 0;
	struct slot_head *h = bpf_map_lookup_elem(&slot_heads, &zero);
	if (!h)
		return;
	__u32 shift = cfg_slot_shift & 31;
	__u32 idx = (cpu << shift) + (__u32)(h->head & ((1ULL << shift) - 1));
	struct slot *s = bpf_map_lookup_elem(&slots, &idx);
	if (!s)
		return;
	const volatile __u64 *w = (const volatile __u64 *)s;
	(void)w[0];
	(void)w[8];
	(void)w[16];
	(void)w[sizeof(*s) / 8 - 1];
}

/* slot_publish hands slot s, written, to the reader: on x86 a plain store
 * after the record's (x86 keeps stores in order); elsewhere an exchange,
 * which orders them. */
static __always_inline void slot_publish(struct slot *s, __u64 pos)
{
	if (cfg_tso) {
		asm volatile("" ::: "memory");
		*(volatile __u64 *)&s->state = pos + 1;
	} else {
		__sync_lock_test_and_set(&s->state, pos + 1);
	}
}

/* ---- System calls ---- */

/* syscall_desc returns the descriptor of system call nr, 0 when it is not
 * traced. */
static __always_inline __u64 syscall_desc(long nr)
{
	if (nr < 0 || nr >= MAX_SYSCALL_NR)
		return 0;
	__u32 k = nr;
	__u64 *d = bpf_map_lookup_elem(&sys_kinds, &k);
	return d ? *d : 0;
}

/* The sys_enter/sys_exit programs are BTF tracepoints (tp_btf): regs is a
 * typed kernel pointer, so its fields are plain loads, not
 * bpf_probe_read_kernel calls (each of which costs tens of ns). */

/* compat reports whether regs belong to a 32-bit task (its system call
 * numbers are another table's). */
static __always_inline bool compat(struct pt_regs *regs)
{
	if (bpf_core_field_exists(((struct pt_regs___x86 *)0)->cs))
		return ((struct pt_regs___x86 *)regs)->cs == X86_USER32_CS;
	if (bpf_core_field_exists(((struct pt_regs___arm64 *)0)->pstate))
		return ((struct pt_regs___arm64 *)regs)->pstate & ARM64_PSR_MODE32;
	return false;
}

static __always_inline long exit_nr(struct pt_regs *regs)
{
	if (bpf_core_field_exists(((struct pt_regs___x86 *)0)->orig_ax))
		return ((struct pt_regs___x86 *)regs)->orig_ax;
	if (bpf_core_field_exists(((struct pt_regs___arm64 *)0)->syscallno))
		return ((struct pt_regs___arm64 *)regs)->syscallno;
	return -1;
}

static __always_inline void syscall_args(struct pt_regs *regs, __u64 *a)
{
	if (bpf_core_field_exists(((struct pt_regs___x86 *)0)->di)) {
		struct pt_regs___x86 *r = (void *)regs;
		a[0] = r->di;
		a[1] = r->si;
		a[2] = r->dx;
		a[3] = r->r10;
		a[4] = r->r8;
		a[5] = r->r9;
	} else if (bpf_core_field_exists(((struct pt_regs___arm64 *)0)->regs)) {
		struct pt_regs___arm64 *r = (void *)regs;
		a[0] = r->regs[0];
		a[1] = r->regs[1];
		a[2] = r->regs[2];
		a[3] = r->regs[3];
		a[4] = r->regs[4];
		a[5] = r->regs[5];
	}
}

static __always_inline void async_enter(__u64 cookie, const __u64 *a, __u32 tgid, __u32 tid, __s32 ustack);
static __always_inline void async_exit(__u64 cookie, long ret);

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long nr)
{
	__u64 cookie = syscall_desc(nr);
	if (!cookie || bench_switch(BENCH_BODY))
		return 0;
	/* The thread's slot from this CPU's hint (the thread's last call
	 * began here), with its IDs and task: no helper call; else the IDs
	 * from the task's fields. */
	struct current cur;
	current_of(regs, &cur);
	struct task_struct *task = cur.task;
	__u32 tgid = cur.tgid, tid = cur.tid;
	struct thread_state *st = cur.st;
	struct thread_slot *hs = cur.hint;

	/* A thread with state was wanted at its first traced call, and
	 * stays wanted while it lives (a process leaves the pid filter when
	 * its last thread exits); only a comm filter can change its mind
	 * (exec, PR_SET_NAME). State is made only for wanted threads. */
	if ((!st || cfg_filter_comm) && !want(tgid))
		return 0;
	if (compat(regs))
		return 0;

	__u64 a[6] = {};
	syscall_args(regs, a);
	if (CK_ASYNC(cookie)) {
		__s32 ustack = -1;
		if ((cfg_stacks & STACKS_USER) && CK_ASYNC(cookie) == ASYNC_SUBMIT)
			ustack = calling_stack(ctx, 0, 0); /* the code submitting iocbs */
		async_enter(cookie, a, tgid, tid, ustack);
		return 0;
	}
	if (cookie & CK_MMAP) {
		if ((a[3] & MAP_ANONYMOUS) || (__s64)a[4] < 0)
			return 0;
	}
	if (cookie & CK_FCNTL) {
		__u64 cmd = a[1];
		if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC && cmd != F_SETFD && !fcntl_lock(cmd))
			return 0;
	}

	/* The call's start, read before the file's fields are looked up
	 * (as early as its filters allow; no faster or slower measured). */
	__u64 ts = bench_switch(BENCH_NO_CLOCK) ? 1 : bpf_ktime_get_boot_ns();
	/* A non-leader thread's exec takes the leader's ID: its state must
	 * not be in a slot, found by ID (thread_state_unslot). */
	bool exec_nonleader = (cookie & CK_EXEC) && tid != tgid;
	if (!st)
		st = thread_state_new(bpf_get_current_task_btf(), !exec_nonleader);
	else if (exec_nonleader)
		st = thread_state_unslot(bpf_get_current_task_btf(), tid, st);
	if (!st) {
		count(C_INFLIGHT_FULL);
		return 0;
	}
	struct inflight *v = &st->call;
	v->ts = ts;
	v->args[0] = a[0];
	v->args[1] = a[1];
	v->args[2] = a[2];
	v->args[3] = a[3];
	v->args[4] = a[4];
	v->args[5] = a[5];
	v->cpu = bpf_get_smp_processor_id();
	v->id = next_id(v->cpu);
	v->pid = tgid;
	v->pos = -1;
	v->size = 0;
	v->ino = 0;
	v->dev = 0;
	v->fflags = 0;
	v->sflags = 0;
	v->kind = CK_KIND(cookie);
	if (!hs) {
		struct thread_slot *slot = held_slot(tid, task->start_boottime);
		if (slot)
			slot_hint_note(slot, tid, regs, task);
	}

	if (cookie & CK_OPENAT2) {
		__u64 how[2] = {};
		bpf_probe_read_user(how, sizeof(how), (const void *)a[2]);
		v->args[2] = how[0]; /* flags */
		v->args[3] = how[1]; /* mode */
	}
	if ((cookie & CK_FCNTL) && fcntl_lock(a[1])) {
		/* struct flock: l_type, l_whence (shorts), l_start, l_len. */
		__s64 fl[3] = {};
		bpf_probe_read_user(fl, sizeof(fl), (const void *)a[2]);
		v->args[2] = (__u64)fl[0] & 0xffffffff; /* l_type | l_whence << 16 */
		v->pos = fl[1];
		v->size = (__u64)fl[2];
	}
	if (cookie & CK_IOV) {
		__u64 n = a[2];
		const __u64 *iov = (const __u64 *)a[1];
		if (n > IOV_CAP) {
			n = IOV_CAP;
			v->sflags |= SF_IOV_PARTIAL;
		}
		__u64 size = 0;
		for (int i = 0; i < IOV_CAP; i++) {
			if (i >= n)
				break;
			__u64 len = 0;
			bpf_probe_read_user(&len, sizeof(len), &iov[2 * i + 1]);
			size += len;
		}
		v->size = size;
	}
	if (cookie & CK_FPOS) {
		bool pos = true;
		if ((cookie & CK_POS_ARG) && (__s64)a[3] != -1)
			pos = false;
		file_info(task, v, (__s64)a[0], pos);
	}

	__u32 p0 = CK_PATH0(cookie), p1 = CK_PATH1(cookie);
	if (p0 != NO_ARG) {
		__u64 up = arg(a, p0);
		if (up && emit_path(v, tid, 0, up, 0) < 0) {
			v->sflags |= SF_PATH0_LATE;
			count(C_PATH_RETRY);
		}
	}
	if (p1 != NO_ARG) {
		__u64 up = arg(a, p1);
		if (up && emit_path(v, tid, 1, up, 0) < 0) {
			v->sflags |= SF_PATH1_LATE;
			count(C_PATH_RETRY);
		}
	}

	if (cfg_cause) {
		st->cause.nr_bios = 0;
		st->cause.submitter = 0;
		st->cause.bio_bytes = 0;
		st->cause.id = v->id;
	}
	if (slot_candidate(cookie) && !bench_switch(BENCH_NO_PREFETCH))
		slot_prefetch(v->cpu);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	__u64 cookie = syscall_desc(exit_nr(regs));
	if (!cookie || bench_switch(BENCH_BODY))
		return 0;
	if (CK_ASYNC(cookie)) {
		async_exit(cookie, ret);
		return 0;
	}
	struct current cur;
	current_of(regs, &cur);
	struct task_struct *task = cur.task;
	__u32 tgid = cur.tgid, tid = cur.tid;
	struct thread_state *st = cur.st;
	if (!st || !st->call.kind) {
		/* Anonymous mmaps and fcntls other than dups are skipped at
		 * enter on purpose. */
		if (!(cookie & (CK_MMAP | CK_FCNTL)) && want(tgid) && !compat(regs))
			count(C_EXIT_NO_ENTER);
		return 0;
	}
	struct inflight *v = &st->call;
	__u64 now = bench_switch(BENCH_NO_CLOCK) ? 2 : bpf_ktime_get_boot_ns();
	if (CK_KIND(cookie) != v->kind) {
		count(C_KIND_MISMATCH);
		goto out;
	}

	__u32 sflags = v->sflags;
	if (sflags & SF_PATH0_LATE) {
		__u64 up = arg(v->args, CK_PATH0(cookie));
		if (emit_path(v, tid, 0, up, 1) < 0) {
			sflags |= SF_PATH0_FAILED;
			count(C_PATH_FAILED);
		}
	}
	if (sflags & SF_PATH1_LATE) {
		__u64 up = arg(v->args, CK_PATH1(cookie));
		if (emit_path(v, tid, 1, up, 1) < 0) {
			sflags |= SF_PATH1_FAILED;
			count(C_PATH_FAILED);
		}
	}

	/* --stacks: the calling code's stack (taken before the record is
	 * reserved: a stack sent inline goes ahead of it). The kernel's here
	 * would only be the system call entry path, the same for every call:
	 * the kernel stacks that say something are the block I/O's. */
	__s32 ustack = -1;
	if (cfg_stacks & STACKS_USER)
		ustack = calling_stack(ctx, v->id, v->cpu);

	struct slot *slot = NULL;
	__u64 spos = 0;
	struct syscall_rec *r;
	if (slot_candidate(cookie)) {
		if (bench_switch(BENCH_NO_OUTPUT))
			slot = bench_scratch_slot();
		else
			slot = slot_reserve(bpf_get_smp_processor_id(), &spos);
		if (!slot)
			count(C_SLOTS_FULL); /* to rb instead */
	}
	if (slot) {
		r = &slot->rec;
	} else {
		r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
		if (!r) {
			count(C_LOST_SYSCALL);
			st->cause.id = 0;
			goto out;
		}
	}
	r->h.type = REC_SYSCALL;
	r->h.pad = 0;
	r->h.kind = v->kind;
	r->h.cpu = v->cpu;
	r->h.time = v->ts;
	r->id = v->id;
	r->dur = now - v->ts;
	r->pid = tgid;
	r->tid = tid;
	r->ret = ret;
	r->args[0] = v->args[0];
	r->args[1] = v->args[1];
	r->args[2] = v->args[2];
	r->args[3] = v->args[3];
	r->args[4] = v->args[4];
	r->args[5] = v->args[5];
	r->size = v->size;
	r->pos = v->pos;
	r->ino = v->ino;
	r->dev = v->dev;
	r->fflags = v->fflags;
	r->nr_bios = 0;
	r->bio_bytes = 0;
	if ((cookie & CK_NEWFD) && ret >= 0) {
		struct inflight tmp = {};
		file_info(task, &tmp, ret, false);
		r->ino = tmp.ino;
		r->dev = tmp.dev;
		r->fflags = tmp.fflags;
		sflags |= tmp.sflags;
	}
	if ((cookie & CK_PAIR) && ret == 0) {
		int fds[2] = {};
		bpf_probe_read_user(fds, sizeof(fds), (const void *)arg(v->args, CK_PAIR_ARG(cookie)));
		r->size = (__u64)(__u32)fds[0] | (__u64)(__u32)fds[1] << 32;
		struct inflight tmp = {};
		file_info(task, &tmp, fds[0], false);
		r->ino = tmp.ino;
		r->dev = tmp.dev;
		r->fflags = tmp.fflags;
		sflags |= tmp.sflags;
		struct inflight tmp1 = {};
		file_info(task, &tmp1, fds[1], false);
		r->pos = (__s64)tmp1.ino;
	}
	if (cfg_cause) {
		if (st->cause.id == v->id) {
			r->nr_bios = st->cause.nr_bios;
			r->bio_bytes = st->cause.bio_bytes;
			sflags |= SF_CAUSE;
			/* A read that queued nothing itself, yet slept for I/O
			 * while page-cache reads of its file were in flight
			 * (still in flight, or completed since it began: queued
			 * by read-ahead or another reader), waited for them. */
			if ((cookie & CK_READ) && !r->nr_bios && (sflags & SF_IOWAIT)) {
				struct inflight fi = {};
				if (sflags & SF_HAVE_FILE) {
					fi.ino = v->ino;
					fi.dev = v->dev;
				} else {
					file_info(task, &fi, (__s64)v->args[0], false);
				}
				struct inode_io_key k = { .ino = fi.ino, .dev = fi.dev };
				struct inode_io *io = fi.ino ? bpf_map_lookup_elem(&inode_io, &k) : NULL;
				if (io && (io->inflight || io->last_done >= v->ts))
					sflags |= SF_WAITED_IO;
			}
		}
	}
	r->ustack = ustack;
	r->kstack = -1;
	/* The thread's name goes out once (user space keeps it per thread),
	 * and again after an exec or a rename. */
	if (!v->comm_sent) {
		bpf_get_current_comm(r->comm, sizeof(r->comm));
		sflags |= SF_COMM;
		v->comm_sent = 1;
	}
	r->sflags = sflags;
	if (slot) {
		if (!bench_switch(BENCH_NO_OUTPUT))
			slot_publish(slot, spos);
	} else
		bpf_ringbuf_submit(r, wakeup_flags());
out:
	st->cause.id = 0;
	v->kind = 0;
	return 0;
}

/* ---- Sleeping for I/O ---- */

#define TASK_UNINTERRUPTIBLE 0x2

/* A thread inside a traced call that blocks in io_schedule() (a folio
 * lock, a buffer, a bio wait: in_iowait is set) marks the call SF_IOWAIT.
 * Attached only when block I/O is linked to calls (cfg_cause); every
 * other switch returns after one test. */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	if (!(prev_state & TASK_UNINTERRUPTIBLE))
		return 0;
	if (!BPF_CORE_READ_BITFIELD(prev, in_iowait))
		return 0;
	struct thread_state *st = thread_state(prev);
	if (st && st->call.kind)
		st->call.sflags |= SF_IOWAIT;
	return 0;
}

/* ---- Process life cycle ---- */

/* A thread renamed (PR_SET_NAME, /proc/.../comm): its next record carries
 * the new name. */
SEC("tp_btf/task_rename")
int BPF_PROG(task_rename, struct task_struct *task, const char *comm)
{
	struct thread_state *st = thread_state(task);
	if (st)
		st->call.comm_sent = 0;
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid;
	__u32 ctgid = child->tgid;
	__u32 cpid = child->pid;
	if (ctgid != cpid)
		return 0; /* a new thread */

	bool traced = want(ptgid);
	if (cfg_filter_pids && cfg_follow_forks &&
	    (bpf_map_lookup_elem(&pids, &ptgid) || (cfg_follow_self && ptgid == cfg_self_tgid))) {
		__u8 one = 1;
		if (bpf_map_update_elem(&pids, &ctgid, &one, BPF_ANY) < 0)
			count(C_PIDS_FULL);
		else
			traced = true;
	}
	if (!traced)
		return 0;

	struct fork_rec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		count(C_LOST_PROC);
		return 0;
	}
	r->h.type = REC_FORK;
	r->h.pad = 0;
	r->h.kind = 0;
	r->h.cpu = bpf_get_smp_processor_id();
	r->h.time = bpf_ktime_get_boot_ns();
	r->ppid = ptgid;
	r->ptid = parent->pid;
	r->pid = ctgid;
	r->tid = cpid;
	r->start = child->start_boottime;
	r->cflags = 0;
	struct task_struct *c = UNTRUSTED(child), *pa = UNTRUSTED(parent);
	if (c->files == pa->files)
		r->cflags |= CF_FILES_SHARED;
	if (c->fs == pa->fs)
		r->cflags |= CF_FS_SHARED;
	r->pad = 0;
	bpf_probe_read_kernel(r->comm, sizeof(r->comm), parent->comm);
	bpf_ringbuf_submit(r, wakeup_flags());
	return 0;
}

/* bpf_find_vma's callback: the VMA's range, offset and file. */
static long code_map_of(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct code_map *m = data;
	m->start = vma->vm_start;
	m->end = vma->vm_end;
	m->pgoff = (__u64)vma->vm_pgoff << 12;
	struct file *f = vma->vm_file;
	if (f) {
		struct inode *ino = f->f_inode;
		if (ino) {
			m->ino = ino->i_ino;
			struct super_block *sb = ino->i_sb;
			if (sb)
				m->dev = sb->s_dev;
		}
	}
	return 0;
}

static __always_inline void exec_maps(struct task_struct *p, __u32 tgid)
{
	struct exec_maps_rec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		count(C_LOST_PROC);
		return;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->h.type = REC_EXEC_MAPS;
	r->h.cpu = bpf_get_smp_processor_id();
	r->h.time = bpf_ktime_get_boot_ns();
	r->pid = tgid;
	struct code_map exe = {}, interp = {}; /* bpf_find_vma's data must be on the stack */
	struct mm_struct *mm = p->mm;
	if (mm) {
		__u64 code = BPF_CORE_READ(mm, start_code);
		bpf_find_vma(p, code, code_map_of, &exe, 0);
	}
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(p);
	__u64 ip = 0;
	if (bpf_core_field_exists(((struct pt_regs___x86 *)0)->ip))
		ip = BPF_CORE_READ((struct pt_regs___x86 *)regs, ip);
	else if (bpf_core_field_exists(((struct pt_regs___arm64 *)0)->pc))
		ip = BPF_CORE_READ((struct pt_regs___arm64 *)regs, pc);
	bpf_find_vma(p, ip, code_map_of, &interp, 0);
	r->exe = exe;
	r->interp = interp;
	bpf_ringbuf_submit(r, wakeup_flags());
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_exec, struct task_struct *p, int old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	/* A non-leader thread that execs takes over the leader's ID and
	 * start time; its state, with its execve in flight, is in its
	 * task-local storage (sys_enter moved it there) and pairs. */
	if (!want(tgid))
		return 0;

	struct thread_state *ts = thread_state(p);
	if (ts)
		ts->call.comm_sent = 0;

	__u32 zero = 0;
	struct exec_rec *r = bpf_map_lookup_elem(&exec_scratch, &zero);
	if (!r)
		return 0;
	r->h.type = REC_EXEC;
	r->h.pad = 0;
	r->h.kind = 0;
	r->h.cpu = bpf_get_smp_processor_id();
	r->h.time = bpf_ktime_get_boot_ns();
	r->pid = tgid;
	r->old_pid = old_pid;
	r->start = p->start_boottime;
	r->pad = 0;
	bpf_probe_read_kernel(r->comm, sizeof(r->comm), p->comm);

	long n = bpf_probe_read_kernel_str(r->data, PATH_CAP, bprm->filename);
	if (n < 0)
		n = 0;
	if (n > PATH_CAP)
		n = PATH_CAP;
	r->name_len = n;

	struct mm_struct *mm = UNTRUSTED(p)->mm;
	__u64 as = BPF_CORE_READ(mm, arg_start), ae = BPF_CORE_READ(mm, arg_end);
	__u32 alen = 0;
	if (ae > as) {
		alen = ae - as > ARGS_CAP ? ARGS_CAP : ae - as;
		__u32 off = n;
		if (off > PATH_CAP)
			off = PATH_CAP;
		if (alen > ARGS_CAP)
			alen = ARGS_CAP;
		if (bpf_probe_read_user(&r->data[off], alen, (const void *)as) < 0)
			alen = 0;
	}
	r->args_len = alen;

	__u64 size = offsetof(struct exec_rec, data) + (__u64)n + (__u64)alen;
	if (size > sizeof(*r))
		size = sizeof(*r);
	if (bpf_ringbuf_output(&rb, r, size, wakeup_flags()) < 0)
		count(C_LOST_PROC);
	if (cfg_stacks & STACKS_USER)
		exec_maps(p, tgid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_exit, struct task_struct *p)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tgid = pt >> 32, tid = (__u32)pt;

	/* The thread's state goes with it: its task-local storage by
	 * itself, its slot freed here. */
	struct thread_state *st = thread_state(p);
	if (st && st->call.kind)
		count(C_ENTER_NO_EXIT);
	thread_slot_free(p->pid, p->start_boottime);
	if (UNTRUSTED(p)->signal->live.counter != 0)
		return 0; /* other threads live on */

	aio_exit(tgid);
	bool traced = want(tgid);
	if (cfg_filter_pids)
		bpf_map_delete_elem(&pids, &tgid);
	if (!traced)
		return 0;

	struct exit_rec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		count(C_LOST_PROC);
		return 0;
	}
	r->h.type = REC_EXIT;
	r->h.pad = 0;
	r->h.kind = 0;
	r->h.cpu = bpf_get_smp_processor_id();
	r->h.time = bpf_ktime_get_boot_ns();
	r->pid = tgid;
	r->tid = tid;
	r->start = p->start_boottime;
	r->code = p->exit_code;
	r->pad = 0;
	bpf_ringbuf_submit(r, wakeup_flags());
	return 0;
}

/* ---- Calls in flight when tracing stops ---- */

struct seq_file;
struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));
struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/* inflight_dump is what dump_inflight writes per thread with a call in
 * flight (task-local storage cannot be read from user space, nor told
 * which threads' slots hold a call). */
struct inflight_dump {
	__u32 tid;
	__u32 pad;
	struct inflight v;
};
const struct inflight_dump *unused_inflight_dump __attribute__((unused)); /* for bpf2go -type */

SEC("iter/task")
int dump_inflight(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	if (!t)
		return 0;
	struct thread_state *st = thread_state(t);
	if (!st || !st->call.kind)
		return 0;
	struct inflight_dump d = {};
	d.tid = t->pid;
	d.v = st->call;
	bpf_seq_write(ctx->meta->seq, &d, sizeof(d));
	return 0;
}

/* ---- Asynchronous requests: io_uring and Linux AIO ---- */

#define PF_IO_WORKER 0x00000010
#define ASYNC_URING 1 /* key: struct io_kiocb * */
#define ASYNC_AIO 2   /* key: user address of the struct iocb, with the tgid */
#define ASYNC_WB 3    /* key: struct wb_writeback_work *; tgid: the syncing thread's tid */

/* Writeback works a traced system call queued (sync, syncfs: the work
 * items sync_inodes_sb and writeback_inodes_sb hand the flusher and wait
 * for), with the call's event ID and thread. */
struct wb_cause {
	__u64 id;
	__u32 tid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64); /* struct wb_writeback_work * */
	__type(value, struct wb_cause);
} wb_works SEC(".maps");

extern struct task_struct *bpf_task_from_pid(__s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

/* The block I/O cause of an asynchronous request. A thread's cause (in
 * cur_syscall) names one request while the thread works on exactly that
 * request, between two boundaries a tracepoint shows:
 *   - io_uring_submit_req .. the next submission or io_uring_enter's
 *     exit (a request issued inline by the submitting thread);
 *   - io_submit enter .. exit, when the call submits a single iocb;
 *   - iomap_dio_rw_begin .. iomap_dio_rw_queued / iomap_dio_complete in
 *     the same thread: one direct I/O, whose kiocb names its request
 *     (io_uring's io_kiocb, or AIO's aio_kiocb), in any thread, io_uring
 *     workers included.
 * When a cause ends, the bios counted under it are added to the request's
 * in-flight entry, and its record carries them. A traced system call's
 * own cause is never replaced. */
struct async_cause {
	__u64 id;    /* the request's event ID, 0: none */
	__u64 key;   /* its in-flight map key */
	__u64 kiocb; /* set by dio_begin: the struct kiocb * it ends with */
	__u32 tgid;  /* ASYNC_AIO: the key's process */
	__u8 kind;   /* ASYNC_URING or ASYNC_AIO */
	__u8 pad[3];
};

/* One io_submit or io_getevents call in progress (they are not traced as
 * system calls of their own: each iocb is an event). */
struct aio_call {
	__u64 iocbpp; /* io_submit: the iocb pointer array */
	__u64 ctx;    /* io_submit: the AIO context */
	__u64 events; /* io_getevents: the io_event array */
	__u32 n;      /* io_submit: iocbs read (at most AIO_CAP) */
	__u32 pad;
};

struct async_state {
	struct async_cause cause;
	struct aio_call call;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct async_state);
} async_state SEC(".maps");

/* ---- io_uring ---- */

#define IORING_OP_READV 1
#define IORING_OP_WRITEV 2
#define IORING_OP_READ_FIXED 4
#define IORING_OP_WRITE_FIXED 5
#define IORING_OP_READ 22
#define IORING_OP_WRITE 23

static __always_inline void async_cause_begin(struct task_struct *t, __u8 kind, __u64 key, __u32 tgid, __u64 id,
					       __u64 kiocb, __u32 submitter);
static __always_inline void async_cause_end(struct task_struct *t);

/* A request was submitted. io_uring_submit_req(struct io_kiocb *req) in
 * every kernel that has it (DepSurf lists it in 6.5, not in 6.2; before, it was
 * io_uring_submit_sqe, not traced: listed as missing). The user_data and
 * opcode are what the tracepoint reads: req->cqe.user_data, req->opcode. */
SEC("tp_btf/io_uring_submit_req")
int uring_submit(__u64 *ctx)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tgid = pt >> 32, tid = (__u32)pt;
	if (!want(tgid))
		return 0;

	struct io_kiocb *req = (struct io_kiocb *)ctx[0];
	struct uring_inflight v = {};
	v.cpu = bpf_get_smp_processor_id();
	v.id = next_id(v.cpu);
	v.ts = bpf_ktime_get_boot_ns();
	v.user_data = BPF_CORE_READ(req, cqe.user_data);
	v.opcode = BPF_CORE_READ(req, opcode);
	v.pid = tgid;
	v.tid = tid;
	v.off = -1;
	v.fd = BPF_CORE_READ(req, cqe.fd);
	if (BPF_CORE_READ(req, flags) & REQ_F_FIXED_FILE) {
		v.uflags |= UF_FIXED; /* a registered file's index, not a descriptor */
	} else {
		struct inflight fi = {};
		file_info(bpf_get_current_task_btf(), &fi, v.fd, false);
		if (fi.sflags & SF_HAVE_FILE) {
			v.ino = fi.ino;
			v.dev = fi.dev;
			v.fflags = fi.fflags;
			v.uflags |= UF_HAVE_FILE;
		}
	}
	switch (v.opcode) {
	case IORING_OP_READV:
	case IORING_OP_WRITEV:
	case IORING_OP_READ_FIXED:
	case IORING_OP_WRITE_FIXED:
	case IORING_OP_READ:
	case IORING_OP_WRITE: {
		struct io_rw *rw = (struct io_rw *)req; /* cmd overlays the start of io_kiocb */
		v.len = BPF_CORE_READ(rw, len);
		v.off = BPF_CORE_READ(rw, kiocb.ki_pos);
		break;
	}
	}
	bpf_get_current_comm(v.comm, sizeof(v.comm));
	v.ustack = -1;
	if ((cfg_stacks & STACKS_USER) && !(bpf_get_current_task_btf()->flags & PF_IO_WORKER))
		v.ustack = calling_stack(ctx, 0, 0); /* the submitting code */
	__u64 key = (__u64)req;
	if (bpf_map_update_elem(&uring_inflight, &key, &v, BPF_ANY) < 0) {
		count(C_URING_FULL);
		return 0;
	}
	/* io_uring's own threads (PF_IO_WORKER: iou-wrk-N, iou-sqp-N) get a
	 * cause only from a boundary that names the request (dio_begin):
	 * they run many requests with nothing between them that a
	 * tracepoint shows, so a cause from here would be a guess. */
	struct task_struct *t = bpf_get_current_task_btf();
	if (!(t->flags & PF_IO_WORKER))
		async_cause_begin(t, ASYNC_URING, key, 0, v.id, 0, tid);
	return 0;
}

/* A request completed. Its arguments by kernel (the loader reads which
 * from btf_trace_io_uring_complete and sets cfg_uring_cqe):
 *   5.19 .. 6.8: (void *ctx, void *req, u64 user_data, int res,
 *                 unsigned cflags, u64 extra1, u64 extra2);
 *   later (6.18 here): (struct io_ring_ctx *ctx, void *req,
 *                 struct io_uring_cqe *cqe), res and cflags in the cqe.
 * Up to 5.18 it had no req (ctx, user_data, res, cflags): nothing to pair
 * it with, so the loader leaves it out (listed as missing), as it does
 * io_uring_submit_req there. */
SEC("tp_btf/io_uring_complete")
int uring_complete(__u64 *ctx)
{
	__u64 key = ctx[1];
	__s32 res;
	__u32 cflags;
	if (cfg_uring_cqe) {
		struct io_uring_cqe *cqe = (struct io_uring_cqe *)ctx[2];
		res = BPF_CORE_READ(cqe, res);
		cflags = BPF_CORE_READ(cqe, flags);
	} else {
		res = (__s32)ctx[3];
		cflags = (__u32)ctx[4];
	}
	struct uring_inflight *v = bpf_map_lookup_elem(&uring_inflight, &key);
	if (!v) {
		__u64 pt = bpf_get_current_pid_tgid();
		if (want(pt >> 32))
			count(C_URING_NO_SUBMIT);
		return 0;
	}
	struct uring_rec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		count(C_LOST_URING);
		goto out;
	}
	r->h.type = REC_URING;
	r->h.pad = 0;
	r->h.kind = 0;
	r->h.cpu = v->cpu;
	r->h.time = v->ts;
	r->id = v->id;
	r->dur = bpf_ktime_get_boot_ns() - v->ts;
	r->pid = v->pid;
	r->tid = v->tid;
	r->user_data = v->user_data;
	r->req = key;
	r->off = v->off;
	r->res = res;
	r->fd = v->fd;
	r->len = v->len;
	r->opcode = v->opcode;
	r->more = (cflags & IORING_CQE_F_MORE) ? 1 : 0;
	r->pad[0] = r->pad[1] = 0;
	__builtin_memcpy(r->comm, v->comm, sizeof(r->comm));
	r->nr_bios = v->nr_bios;
	r->bio_bytes = v->bio_bytes;
	r->caused = v->caused;
	r->uflags = v->uflags;
	r->pad2[0] = r->pad2[1] = 0;
	r->ino = v->ino;
	r->dev = v->dev;
	r->fflags = v->fflags;
	r->ustack = v->ustack;
	r->pad3 = 0;
	r->ustack = v->ustack;
	r->pad3 = 0;
	bpf_ringbuf_submit(r, wakeup_flags());
out:
	if (cflags & IORING_CQE_F_MORE) {
		/* A multishot request (accept, recv, read multishot, poll)
		 * stays armed: keep it, and let its next completion be a new
		 * event from this one on. */
		__u32 cpu = bpf_get_smp_processor_id();
		v->id = next_id(cpu);
		v->cpu = cpu;
		v->ts = bpf_ktime_get_boot_ns();
		v->nr_bios = 0;
		v->bio_bytes = 0;
		return 0;
	}
	bpf_map_delete_elem(&uring_inflight, &key);
	return 0;
}

/* ---- Block I/O causes of asynchronous requests ---- */

/* Accesses the compiler keeps as written, in order: async_cause_end can be
 * interrupted on its thread by another run of itself (below). */
#define LOAD_ONCE(x) (*(volatile typeof(x) *)&(x))
#define STORE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))
#define COMPILER_BARRIER() asm volatile("" ::: "memory")

/* Ends the thread's asynchronous cause and adds the bios it queued to the
 * request's counts, once. A direct read's completion can run in an
 * interrupt on the very thread that is ending its cause (the bio completes
 * just after the submitter dropped its reference: iomap_dio_complete
 * inline, then dio_complete here, inside dio_queued's run): whichever run
 * still finds the cause claims it first, then takes the thread's counts
 * and clears them, then adds them; the other finds nothing to do. (Both
 * added them before: a read said it caused two bios, one of them the
 * next read's.) */
static __always_inline void async_cause_end(struct task_struct *t)
{
	struct async_state *as = bpf_task_storage_get(&async_state, t, 0, 0);
	if (!as)
		return;
	__u64 id = LOAD_ONCE(as->cause.id);
	if (!id)
		return;
	__u64 key = as->cause.key;
	__u32 tgid = as->cause.tgid;
	__u8 kind = as->cause.kind;
	STORE_ONCE(as->cause.id, 0);
	as->cause.kiocb = 0;
	COMPILER_BARRIER();
	struct thread_state *st = thread_state(t);
	if (!st || LOAD_ONCE(st->cause.id) != id)
		return;
	__u32 nr = st->cause.nr_bios;
	__u64 bytes = st->cause.bio_bytes;
	STORE_ONCE(st->cause.id, 0);
	st->cause.nr_bios = 0;
	st->cause.submitter = 0;
	st->cause.bio_bytes = 0;
	COMPILER_BARRIER();
	if (kind == ASYNC_URING) {
		struct uring_inflight *v = bpf_map_lookup_elem(&uring_inflight, &key);
		if (v && v->id == id) {
			v->nr_bios += nr;
			v->bio_bytes += bytes;
			v->caused = 1;
		}
	} else if (kind == ASYNC_AIO) {
		struct aio_key k = { .iocb = key, .tgid = tgid };
		struct aio_rec *v = bpf_map_lookup_elem(&aio_inflight, &k);
		if (v && v->id == id) {
			v->nr_bios += nr;
			v->bio_bytes += bytes;
			v->caused = 1;
		}
	} else if (kind == ASYNC_WB) {
		/* The syncing call waits for its works: add the flusher's
		 * bios to its counts while it is still in that call. */
		struct task_struct *s = bpf_task_from_pid(tgid);
		if (s) {
			struct thread_state *ss = thread_state(s);
			if (ss && ss->cause.id == id) {
				__sync_fetch_and_add(&ss->cause.nr_bios, nr);
				__sync_fetch_and_add(&ss->cause.bio_bytes, bytes);
			}
			bpf_task_release(s);
		}
	}
}

static __always_inline void async_cause_begin(struct task_struct *t, __u8 kind, __u64 key, __u32 tgid, __u64 id,
					       __u64 kiocb, __u32 submitter)
{
	if (!cfg_cause)
		return;
	struct thread_state *st = thread_state(t);
	if (!st)
		st = thread_state_new(t, false);
	if (!st)
		return;
	if (st->call.kind && st->cause.id == st->call.id)
		return; /* a traced system call's own */
	async_cause_end(t);
	struct async_state *as = bpf_task_storage_get(&async_state, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!as)
		return;
	as->cause.id = id;
	as->cause.key = key;
	as->cause.kiocb = kiocb;
	as->cause.tgid = tgid;
	as->cause.kind = kind;
	st->cause.nr_bios = 0;
	st->cause.bio_bytes = 0;
	/* Another thread's request (an io_uring worker running it): its
	 * bios are the submitter's. */
	st->cause.submitter = submitter != (__u32)t->pid ? submitter : 0;
	st->cause.id = id;
}

#define IOCB_AIO_RW (1 << 23) /* include/linux/fs.h: a kiocb of fs/aio.c */

/* One direct I/O through iomap (ext4, xfs, btrfs, ...): its bios belong to
 * the asynchronous request the kiocb is part of. */
SEC("tp_btf/iomap_dio_rw_begin")
int BPF_PROG(dio_begin, struct kiocb *iocb, void *iter, unsigned int dio_flags, __u64 done_before)
{
	if (!cfg_cause)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	if (iocb->ki_flags & IOCB_AIO_RW) {
		struct aio_key k = {
			.iocb = BPF_CORE_READ((struct aio_kiocb *)iocb, ki_res.obj),
			.tgid = t->tgid,
		};
		struct aio_rec *v = bpf_map_lookup_elem(&aio_inflight, &k);
		if (v)
			async_cause_begin(t, ASYNC_AIO, k.iocb, k.tgid, v->id, (__u64)iocb, v->tid);
		return 0;
	}
	/* io_uring's read/write command (struct io_rw, whose kiocb comes
	 * first) overlays the start of its io_kiocb. */
	__u64 key = (__u64)iocb;
	struct uring_inflight *v = bpf_map_lookup_elem(&uring_inflight, &key);
	if (v)
		async_cause_begin(t, ASYNC_URING, key, 0, v->id, key, v->tid);
	return 0;
}

/* The direct I/O was queued (it completes later, elsewhere): this thread
 * is done with it. */
SEC("tp_btf/iomap_dio_rw_queued")
int BPF_PROG(dio_queued, void *inode, long long offset, __u64 length)
{
	if (!cfg_cause)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct async_state *as = bpf_task_storage_get(&async_state, t, 0, 0);
	if (as && as->cause.id && as->cause.kiocb)
		async_cause_end(t);
	return 0;
}

/* A direct I/O completed; in the thread that began it when it waited. */
SEC("tp_btf/iomap_dio_complete")
int BPF_PROG(dio_complete, struct kiocb *iocb, int error, long ret)
{
	if (!cfg_cause)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct async_state *as = bpf_task_storage_get(&async_state, t, 0, 0);
	if (as && as->cause.id && as->cause.kiocb == (__u64)iocb)
		async_cause_end(t);
	return 0;
}

/* ---- Linux AIO (io_submit / io_getevents) ---- */

#define AIO_CAP 64         /* iocbs read per io_submit */
#define AIO_REAP_CAP 4096  /* completions read per io_getevents */
#define IOCB_CMD_PREADV 7
#define IOCB_CMD_PWRITEV 8

/* include/uapi/linux/aio_abi.h (little endian) */
struct iocb_user {
	__u64 aio_data;
	__u32 aio_key;
	__u32 aio_rw_flags;
	__u16 aio_lio_opcode;
	__s16 aio_reqprio;
	__u32 aio_fildes;
	__u64 aio_buf;
	__u64 aio_nbytes;
	__s64 aio_offset;
	__u64 aio_reserved2;
	__u32 aio_flags;
	__u32 aio_resfd;
};
struct io_event_user {
	__u64 data;
	__u64 obj;
	__s64 res;
	__s64 res2;
};

struct aio_submit_loop {
	__u64 iocbpp;
	__u64 ctx;
	__u64 ts;
	__u64 first_id;
	__u64 first_key;
	__u32 tgid, tid, cpu;
	__s32 ustack;
};

static long aio_submit_one(__u32 i, void *data)
{
	struct aio_submit_loop *l = data;
	__u64 up = 0;
	if (bpf_probe_read_user(&up, sizeof(up), (const void *)(l->iocbpp + (__u64)i * 8)) < 0 || !up)
		return 1;
	struct iocb_user cb;
	if (bpf_probe_read_user(&cb, sizeof(cb), (const void *)up) < 0)
		return 1;
	struct aio_rec v = {};
	v.h.type = REC_AIO;
	v.h.cpu = l->cpu;
	v.h.time = l->ts;
	v.id = next_id(l->cpu);
	v.pid = l->tgid;
	v.tid = l->tid;
	v.data = cb.aio_data;
	v.iocb = up;
	v.ustack = l->ustack;
	v.off = cb.aio_offset;
	v.ctx = l->ctx;
	v.fd = (__s32)cb.aio_fildes;
	v.opcode = cb.aio_lio_opcode;
	v.nbytes = cb.aio_nbytes;
	if (cb.aio_lio_opcode == IOCB_CMD_PREADV || cb.aio_lio_opcode == IOCB_CMD_PWRITEV) {
		__u64 n = cb.aio_nbytes, size = 0;
		if (n > IOV_CAP) {
			n = IOV_CAP;
			v.aflags |= AF_IOV_PARTIAL;
		}
		const __u64 *iov = (const __u64 *)cb.aio_buf;
		for (int j = 0; j < IOV_CAP; j++) {
			if (j >= n)
				break;
			__u64 len = 0;
			bpf_probe_read_user(&len, sizeof(len), &iov[2 * j + 1]);
			size += len;
		}
		v.nbytes = size;
	}
	struct inflight fi = {};
	file_info(bpf_get_current_task_btf(), &fi, v.fd, false);
	if (fi.sflags & SF_HAVE_FILE) {
		v.fflags = fi.fflags;
		v.ino = fi.ino;
		v.dev = fi.dev;
		v.aflags |= AF_HAVE_FILE;
	}
	bpf_get_current_comm(v.comm, sizeof(v.comm));
	__u8 one = 1;
	bpf_map_update_elem(&aio_tgids, &l->tgid, &one, BPF_ANY);
	struct aio_key k = { .iocb = up, .tgid = l->tgid };
	if (bpf_map_update_elem(&aio_inflight, &k, &v, BPF_ANY) < 0) {
		count(C_AIO_FULL);
		return 0;
	}
	if (i == 0) {
		l->first_id = v.id;
		l->first_key = up;
	}
	return 0;
}

static __always_inline void aio_submit_enter(const __u64 *a, __u32 tgid, __u32 tid, __s32 ustack)
{
	__s64 nr = a[1];
	if (nr <= 0)
		return;
	struct task_struct *t = bpf_get_current_task_btf();
	struct async_state *as = bpf_task_storage_get(&async_state, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!as) {
		count_n(C_AIO_FULL, nr);
		return;
	}
	__u32 n = nr > AIO_CAP ? AIO_CAP : nr;
	if (nr > AIO_CAP)
		count_n(C_AIO_OVER_CAP, nr - AIO_CAP);
	struct aio_submit_loop l = {
		.iocbpp = a[2],
		.ctx = a[0],
		.ts = bpf_ktime_get_boot_ns(),
		.tgid = tgid,
		.tid = tid,
		.cpu = bpf_get_smp_processor_id(),
		.ustack = ustack,
	};
	as->call.iocbpp = l.iocbpp;
	as->call.ctx = l.ctx;
	as->call.n = n;
	bpf_loop(n, aio_submit_one, &l, 0);
	/* A single request: whatever block I/O the call queues is its. */
	if (n == 1 && nr == 1 && l.first_id && !(t->flags & PF_IO_WORKER))
		async_cause_begin(t, ASYNC_AIO, l.first_key, tgid, l.first_id, 0, tid);
}

struct aio_unsubmit_loop {
	__u64 iocbpp;
	__u32 from, tgid;
};

static long aio_unsubmit_one(__u32 i, void *data)
{
	struct aio_unsubmit_loop *l = data;
	__u64 up = 0;
	if (bpf_probe_read_user(&up, sizeof(up), (const void *)(l->iocbpp + (__u64)(l->from + i) * 8)) < 0)
		return 1;
	struct aio_key k = { .iocb = up, .tgid = l->tgid };
	bpf_map_delete_elem(&aio_inflight, &k);
	return 0;
}

static __always_inline void aio_submit_exit(long ret)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct async_state *as = bpf_task_storage_get(&async_state, t, 0, 0);
	if (!as || !as->call.n)
		return;
	if (cfg_cause)
		async_cause_end(t);
	/* io_submit returns how many of the iocbs it took, in order; the
	 * others were not submitted and will never complete. */
	__u32 from = ret < 0 ? 0 : (ret > as->call.n ? as->call.n : (__u32)ret);
	if (from < as->call.n) {
		struct aio_unsubmit_loop l = { .iocbpp = as->call.iocbpp, .from = from, .tgid = t->tgid };
		bpf_loop(as->call.n - from, aio_unsubmit_one, &l, 0);
	}
	as->call.n = 0;
}

static __always_inline void aio_reap_enter(__u64 events)
{
	struct async_state *as =
		bpf_task_storage_get(&async_state, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (as)
		as->call.events = events;
}

struct aio_reap_loop {
	__u64 events;
	__u64 now;
	__u32 tgid;
	__u32 pad;
};

static long aio_reap_one(__u32 i, void *data)
{
	struct aio_reap_loop *l = data;
	struct io_event_user ev;
	if (bpf_probe_read_user(&ev, sizeof(ev), (const void *)(l->events + (__u64)i * sizeof(ev))) < 0)
		return 1;
	struct aio_key k = { .iocb = ev.obj, .tgid = l->tgid };
	struct aio_rec *v = bpf_map_lookup_elem(&aio_inflight, &k);
	if (!v) {
		count(C_AIO_NO_SUBMIT);
		return 0;
	}
	struct aio_rec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		count(C_LOST_AIO);
	} else {
		*r = *v;
		r->dur = l->now - v->h.time;
		r->res = ev.res;
		bpf_ringbuf_submit(r, wakeup_flags());
	}
	bpf_map_delete_elem(&aio_inflight, &k);
	return 0;
}

static __always_inline void aio_reap_exit(__s64 ret)
{
	struct async_state *as = bpf_task_storage_get(&async_state, bpf_get_current_task_btf(), 0, 0);
	if (!as || !as->call.events)
		return;
	__u64 events = as->call.events;
	as->call.events = 0;
	if (ret <= 0)
		return;
	__u32 n = ret > AIO_REAP_CAP ? AIO_REAP_CAP : ret;
	if (ret > AIO_REAP_CAP)
		count_n(C_AIO_REAP_OVER_CAP, ret - AIO_REAP_CAP);
	struct aio_reap_loop l = {
		.events = events,
		.now = bpf_ktime_get_boot_ns(),
		.tgid = bpf_get_current_pid_tgid() >> 32,
	};
	bpf_loop(n, aio_reap_one, &l, 0);
}

/* The system calls of asynchronous I/O, from sys_enter/sys_exit
 * (CK_ASYNC): io_submit and the reaping calls make the AIO requests'
 * events; io_uring_enter's exit ends an inline submission's cause. */
static __always_inline void async_enter(__u64 cookie, const __u64 *a, __u32 tgid, __u32 tid, __s32 ustack)
{
	switch (CK_ASYNC(cookie)) {
	case ASYNC_SUBMIT:
		aio_submit_enter(a, tgid, tid, ustack);
		break;
	case ASYNC_REAP:
		aio_reap_enter(a[3]);
		break;
	}
}

static __always_inline void async_exit(__u64 cookie, long ret)
{
	switch (CK_ASYNC(cookie)) {
	case ASYNC_SUBMIT:
		aio_submit_exit(ret);
		break;
	case ASYNC_REAP:
		aio_reap_exit(ret);
		break;
	case ASYNC_URING_ENTER:
		if (cfg_cause)
			async_cause_end(bpf_get_current_task_btf());
		break;
	}
}

/* The kernel destroys a process's AIO contexts when it exits (waiting for
 * what is in flight): requests it never reaped are sent then, marked, so
 * that they are named while the process's descriptors are still known. */
static long aio_exit_one(void *map, struct aio_key *k, struct aio_rec *v, void *data)
{
	__u32 tgid = *(__u32 *)data;
	if (k->tgid != tgid)
		return 0;
	struct aio_rec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		count(C_LOST_AIO);
	} else {
		*r = *v;
		r->aflags |= AF_UNREAPED;
		bpf_ringbuf_submit(r, wakeup_flags());
	}
	bpf_map_delete_elem(map, k);
	return 0;
}

static __always_inline void aio_exit(__u32 tgid)
{
	if (!bpf_map_lookup_elem(&aio_tgids, &tgid))
		return;
	bpf_for_each_map_elem(&aio_inflight, aio_exit_one, &tgid, 0);
	bpf_map_delete_elem(&aio_tgids, &tgid);
}

/* ---- Writeback a traced system call waits for ---- */

/* A traced call (sync, syncfs) queues a writeback work for the flusher. */
SEC("tp_btf/writeback_queue")
int BPF_PROG(wb_queue, void *wb, void *work)
{
	if (!cfg_cause)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct thread_state *st = thread_state(t);
	if (!st || !st->call.kind || st->cause.id != st->call.id)
		return 0;
	struct wb_cause c = { .id = st->cause.id, .tid = t->pid };
	__u64 k = (__u64)work;
	bpf_map_update_elem(&wb_works, &k, &c, BPF_ANY);
	return 0;
}

/* The flusher runs that work: its bios are the call's. */
SEC("tp_btf/writeback_start")
int BPF_PROG(wb_start, void *wb, void *work)
{
	if (!cfg_cause)
		return 0;
	__u64 k = (__u64)work;
	struct wb_cause *c = bpf_map_lookup_elem(&wb_works, &k);
	if (c)
		async_cause_begin(bpf_get_current_task_btf(), ASYNC_WB, k, c->tid, c->id, 0, 0);
	return 0;
}

SEC("tp_btf/writeback_written")
int BPF_PROG(wb_written, void *wb, void *work)
{
	if (!cfg_cause)
		return 0;
	__u64 k = (__u64)work;
	struct task_struct *t = bpf_get_current_task_btf();
	struct async_state *as = bpf_task_storage_get(&async_state, t, 0, 0);
	if (as && as->cause.id && as->cause.kind == ASYNC_WB && as->cause.key == k)
		async_cause_end(t);
	bpf_map_delete_elem(&wb_works, &k);
	return 0;
}

/* ---- Page-cache provenance (pagecache.h): pages leaving the cache ---- */

_Static_assert(PC_REC_TYPE == REC_PAGECACHE, "pc_rec type");

/* Only the fields read; offsets and existence per kernel by CO-RE. */
struct address_space {
	struct inode *host;
} __attribute__((preserve_access_index));
/* The folio's (or, up to 5.18, the page's) first word is its flags
 * (mm_types.h asserts folio->flags at page->flags, offset 0 in every
 * version); 6.18 made it a struct (memdesc_flags_t) around the same
 * unsigned long, so it is read by offset, not by field. */
struct folio {
	struct address_space *mapping;
	unsigned long index;
	unsigned long _flags_1; /* 6.2 and later: the first tail page's flags */
} __attribute__((preserve_access_index));
struct folio___v62 {
	unsigned char _folio_order; /* 6.2 .. 6.5 */
} __attribute__((preserve_access_index));
struct page {
	struct address_space *mapping;
	unsigned long index;
	unsigned char compound_order; /* up to 6.1: in the first tail page */
} __attribute__((preserve_access_index));
enum pageflags {
	PG_head = 6, /* the value is the running kernel's (CO-RE) */
};

/* folio_order(): the log2 of the pages of the folio (or compound page)
 * whose head is at head (page[0]); 0 when PG_head is clear (a single
 * page). Where the order lives:
 *   6.8 and later (6.18 here): the low byte of folio->_flags_1;
 *   6.2 .. 6.5: folio->_folio_order (which 6.8 no longer has);
 *   up to 6.1 (5.15's struct page, 5.19's folio): the first tail page's
 *     compound_order (struct page, page[1]).
 * The 6.2/6.5/6.8 layouts are from DepSurf's listing of struct folio; the
 * branch is chosen by which fields the kernel's BTF has. */
static __always_inline __u32 folio_order(void *head)
{
	unsigned long flags = 0;
	bpf_probe_read_kernel(&flags, sizeof(flags), head);
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 0;
	if (bpf_core_field_exists(struct folio___v62, _folio_order))
		return BPF_CORE_READ((struct folio___v62 *)head, _folio_order);
	if (bpf_core_field_exists(struct folio, _flags_1))
		return BPF_CORE_READ((struct folio *)head, _flags_1) & 0xff;
	if (bpf_core_field_exists(struct page, compound_order)) {
		struct page *tail = (struct page *)(head + bpf_core_type_size(struct page));
		return BPF_CORE_READ(tail, compound_order);
	}
	return 0;
}

/* A folio of a file whose page-cache reads the block programs saw
 * (inode_io has it) left the page cache: reclaim, DAMON pageout,
 * truncation, drop_caches. Its pages are no longer what a fill brought
 * in. Attached with page-cache provenance only.
 * mm_filemap_delete_from_page_cache(struct folio *folio) since 5.19 (the
 * folio conversion), (struct page *page) in 5.15 (cfg_evict_page: the
 * loader reads which from btf_trace_mm_filemap_delete_from_page_cache).
 * The record holds what the tracepoint's own fields held (filemap.h):
 * i_ino of mapping->host, s_dev of its i_sb (i_rdev when it has none),
 * the index, and the order (folio_order; the tracepoint itself has
 * reported it only since it gained an order field). */
SEC("tp_btf/mm_filemap_delete_from_page_cache")
int pc_evict(__u64 *ctx)
{
	void *head = (void *)ctx[0];
	struct address_space *mapping;
	unsigned long index;
	if (cfg_evict_page) {
		mapping = BPF_CORE_READ((struct page *)head, mapping);
		index = BPF_CORE_READ((struct page *)head, index);
	} else {
		mapping = BPF_CORE_READ((struct folio *)head, mapping);
		index = BPF_CORE_READ((struct folio *)head, index);
	}
	struct inode *host = BPF_CORE_READ(mapping, host);
	__u64 ino = BPF_CORE_READ(host, i_ino);
	struct super_block *sb = BPF_CORE_READ(host, i_sb);
	__u32 dev = sb ? BPF_CORE_READ(sb, s_dev) : BPF_CORE_READ(host, i_rdev);
	struct inode_io_key k = { .ino = ino, .dev = dev };
	if (!bpf_map_lookup_elem(&inode_io, &k))
		return 0;
	struct pc_rec *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		count(C_LOST_PC);
		return 0;
	}
	__u32 order = folio_order(head) & 31;
	r->type = REC_PAGECACHE;
	r->kind = PC_EVICT;
	r->flags = 0;
	r->cpu = bpf_get_smp_processor_id();
	r->time = bpf_ktime_get_boot_ns();
	r->bio = 0;
	r->ino = ino;
	r->dev = dev;
	r->off = (__u64)index << cfg_page_shift;
	r->bytes = 1U << (cfg_page_shift + order);
	r->cause = 0;
	r->pid = 0;
	r->bdev = 0;
	r->sector = 0;
	bpf_ringbuf_submit(r, wakeup_flags());
	return 0;
}
