// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * blockio.bpf.c: block I/O paired from bio queue to completion by the bio's
 * address, attributed to the thread that queued it and linked to the system
 * call it was queued in.
 *
 *   block_bio_queue      bio* -> bio_info{queue time, submitter, cause, inode}
 *   block_split          new child bio* -> copy of its parent's (bi_private) info
 *   block_rq_issue       request* -> issue time (block_rq_requeue forgets it)
 *   block_rq_complete    walk rq->bio, bi_next...: one record per bio
 *   block_bio_complete   one record (bio-based devices: device-mapper, md)
 *   block_bio_*merge, block_bio_remap: counted
 *   writeback_mark_inode_dirty (pid filter only): inodes traced processes dirtied
 *
 * A bio address already in the in-flight map when a bio is queued (or split
 * off) at that address is a bio whose completion never reached these
 * programs: the kernel freed it and reused its memory. Its record is sent
 * then, flagged RF_UNSEEN, so it is neither lost silently nor mistaken for
 * the new bio. (Seen on 6.18 while another BPF tool attached programs to
 * the block tracepoints: a block_rq_complete run that ftrace saw, with no
 * recursion miss counted.) The queue of the new bio can be missed the same
 * way, so a completion also checks that the entry is its bio (direction,
 * device, sector) before using it.
 *
 * Raw tracepoints and CO-RE reads against minimal preserve_access_index
 * structs: no vmlinux.h. Needs Linux 5.17 (bpf_loop, block_split(bio, sector)).
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "blockio.h"
#include "cur_syscall.h"
#include "pagecache.h"
#include "unwind.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* ---- kernel types: only the fields read here, relocated by CO-RE ---- */

struct bvec_iter {
	__u64 bi_sector;
	unsigned int bi_size;
	unsigned int bi_idx;
	unsigned int bi_bvec_done;
} __attribute__((preserve_access_index));

struct bio_vec {
	struct page *bv_page;
	unsigned int bv_len;
	unsigned int bv_offset;
} __attribute__((preserve_access_index));

struct block_device {
	__u64 bd_start_sect;
	__u32 bd_dev;
} __attribute__((preserve_access_index));

struct bio {
	struct bio *bi_next;
	struct block_device *bi_bdev;
	unsigned int bi_opf;
	unsigned short bi_flags;
	__u8 bi_status;
	struct bvec_iter bi_iter;
	void *bi_private;
	unsigned short bi_vcnt;
	struct bio_vec *bi_io_vec;
} __attribute__((preserve_access_index));

struct request {
	unsigned int __data_len;
	struct bio *bio;
} __attribute__((preserve_access_index));

struct super_block {
	__u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
	unsigned short i_mode;
	struct super_block *i_sb;
	unsigned long i_ino;
} __attribute__((preserve_access_index));

struct address_space {
	struct inode *host;
} __attribute__((preserve_access_index));

struct page {
	unsigned long compound_head;
	struct address_space *mapping;
} __attribute__((preserve_access_index));

struct folio {
	struct address_space *mapping;
	unsigned long index;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int pid;
	__u64 start_boottime;
} __attribute__((preserve_access_index));

/* cur_thread_state returns the current thread's state (cur_syscall.h),
 * NULL when it has none. */
static __always_inline struct syscall_state *cur_thread_state(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	return syscall_state_of(t, t->pid, t->start_boottime);
}

#define PF_KTHREAD 0x00200000
#define S_IFMT 00170000
#define S_IFBLK 0060000
#define MAPPING_FLAGS 3UL /* PAGE_MAPPING_ANON | PAGE_MAPPING_MOVABLE */
#define MAX_CHAIN 4096    /* bios walked per request completion */

/* ---- set by the loader before load ---- */

/* bit of BIO_PAGE_PINNED in bio->bi_flags (from kernel BTF); >= 16: unknown */
const volatile __u32 bio_pinned_bit = 0xff;
/* tgid whose bios are ignored (iotrace itself), 0: none */
const volatile __u32 self_tgid = 0;
/* keep only bios of processes in pid_filter (and what they caused) */
const volatile bool filter_pids = false;
/* timestamps from CLOCK_MONOTONIC instead of CLOCK_BOOTTIME */
const volatile bool clock_monotonic = false;
/* --stacks: STACKS_USER | STACKS_KERNEL (cur_syscall.h) at queue */
const volatile __u8 stack_mode = 0;
/* user stacks walked with the syscall side's unwind tables (unwind.h) */
const volatile bool unwind_mode = false;
/* force a wakeup once this many bytes wait in the ring buffer */
const volatile __u64 wakeup_bytes = 64 * 1024;
/* page-cache provenance: send pc_rec records into pc_ring (the syscall
 * object's ring, replaced in by the loader), and track the page-cache
 * reads of processes the pid filter leaves out for them */
const volatile bool pc_records = false;
/* log2 of the page size */
const volatile __u32 page_shift = 12;
/* force a wakeup of pc_ring's reader once this many bytes wait in it */
const volatile __u64 pc_wakeup_bytes = 64 * 1024;

/* ---- maps ---- */

struct bio_info {
	__u64 queue_ts;
	__u64 cause;
	__u64 inode;
	__u64 queue_sector;    /* first sector when queued (or split) */
	__u64 part_sector; /* first sector, once a partial completion happened */
	__u32 queue_bytes;     /* bytes when queued (or split) */
	__u32 part_bytes;  /* bytes completed by earlier partial completions */
	__u32 ino_dev;
	__u32 opf; /* bi_opf when queued: for a bio still in flight at stop */
	__u32 pid, tid, cpu;
	__u16 flags;
	__u16 pad;
	char comm[BLK_COMM_LEN];
	__s32 ustack, kstack;
	__u32 dev; /* bd_dev when queued: for a bio still in flight at stop */
	__u32 pad3;
	__u64 start_sect; /* the partition's first sector: queue_sector is the disk's */
	__u64 file_off;   /* a page-cache read (RF_INODE_READ): the file offset it fills from */
	__u16 pc_flags;   /* its enum pc_flags (PCF_NONCONTIG, PCF_UNTRACED) */
	__u16 pad4[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* resized by the loader */
	__type(key, __u64);         /* struct bio * */
	__type(value, struct bio_info);
} bios SEC(".maps");

/* issue times of requests in flight; made a plain hash map, preallocated,
 * by the loader (preallocatePlain), as bios */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* resized by the loader (tests) */
	__type(key, __u64); /* struct request * */
	__type(value, __u64); /* issue time */
} rqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by the loader */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BC_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* pc_rec records (pagecache.h): the syscall object's ring, replaced in by
 * the loader when pc_records is set; one page, unused, otherwise */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} pc_ring SEC(".maps");

/* tgids to trace (the syscall object's map, passed in by the loader) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* adapted by the loader to the real map */
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

struct inode_key {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

/* inodes dirtied by traced processes (pid filter only): their writeback is kept */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct inode_key);
	__type(value, __u32); /* tgid that dirtied it */
} dirty_inodes SEC(".maps");

/* Makes struct block_rec part of the BTF so bpf2go generates its Go type
 * (layout_linux_test.go compares it with the decoder's offsets). */
const struct block_rec *unused_block_rec __attribute__((unused));

/* ---- helpers ---- */

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += 1;
}

static __always_inline __u64 now(void)
{
	if (clock_monotonic)
		return bpf_ktime_get_ns();
	return bpf_ktime_get_boot_ns();
}

static __always_inline __u64 rb_flags(void)
{
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* The inode whose page cache the bio's first page belongs to; returns its
 * address_space (0 when none). */
static __always_inline unsigned long bio_inode(struct bio *bio, struct bio_info *bi)
{
	struct bio_vec *vec = BPF_CORE_READ(bio, bi_io_vec);
	if (!vec || BPF_CORE_READ(bio, bi_vcnt) == 0)
		return 0;
	__u32 idx = BPF_CORE_READ(bio, bi_iter.bi_idx);
	struct page *page;
	if (bpf_probe_read_kernel(&page, sizeof(page), &vec[idx].bv_page) || !page)
		return 0;
	unsigned long head = BPF_CORE_READ(page, compound_head);
	if (head & 1) /* a tail page of a large folio */
		page = (struct page *)(head - 1);
	unsigned long mapping = (unsigned long)BPF_CORE_READ(page, mapping);
	if (!mapping || (mapping & MAPPING_FLAGS))
		return 0;
	struct inode *host = BPF_CORE_READ((struct address_space *)mapping, host);
	if (!host)
		return 0;
	unsigned short mode = BPF_CORE_READ(host, i_mode);
	if ((mode & S_IFMT) == S_IFBLK) /* the block device's own cache: no file */
		return 0;
	bi->inode = BPF_CORE_READ(host, i_ino);
	bi->ino_dev = BPF_CORE_READ(host, i_sb, s_dev);
	return mapping;
}

/* ---- page-cache provenance (pagecache.h) ---- */

/* The file offset of byte skip of bio_vec v, a page of mapping's cache
 * (a bvec may span the pages of a large folio); -1 when the page belongs
 * to another mapping. */
static __always_inline __s64 bvec_file_off(struct bio_vec *v, __u32 skip, unsigned long mapping)
{
	struct page *page;
	if (bpf_probe_read_kernel(&page, sizeof(page), &v->bv_page) || !page)
		return -1;
	__u64 psize = bpf_core_type_size(struct page);
	__u32 off = BPF_CORE_READ(v, bv_offset) + skip;
	unsigned long p = (unsigned long)page + (unsigned long)(off >> page_shift) * psize;
	off &= (1U << page_shift) - 1;
	unsigned long head = BPF_CORE_READ((struct page *)p, compound_head);
	head = (head & 1) ? head - 1 : p;
	struct folio *f = (struct folio *)head;
	if ((unsigned long)BPF_CORE_READ(f, mapping) != mapping || !psize)
		return -1;
	__u64 index = BPF_CORE_READ(f, index) + (p - head) / psize;
	return (__s64)((index << page_shift) + off);
}

/* The file range a page-cache read bio fills: bi->file_off, and
 * PCF_NONCONTIG when its pages are not one contiguous run of the file
 * (then [file_off, file_off + bytes) only bounds them). Read at queue,
 * when the iterator still covers the whole vector. */
static __always_inline void bio_file_range(struct bio *bio, struct bio_info *bi, unsigned long mapping)
{
	struct bio_vec *vec = BPF_CORE_READ(bio, bi_io_vec);
	__u32 idx = BPF_CORE_READ(bio, bi_iter.bi_idx);
	__u32 done = BPF_CORE_READ(bio, bi_iter.bi_bvec_done);
	__u16 vcnt = BPF_CORE_READ(bio, bi_vcnt);
	__s64 first = bvec_file_off(&vec[idx], done, mapping);
	bi->file_off = first < 0 ? 0 : (__u64)first;
	if (first < 0 || idx != 0 || done != 0 || vcnt == 0) {
		bi->pc_flags |= PCF_NONCONTIG;
		return;
	}
	struct bio_vec *last = &vec[vcnt - 1];
	__u32 len = BPF_CORE_READ(last, bv_len);
	__s64 end = len ? bvec_file_off(last, len - 1, mapping) : -1;
	if (end < 0 || (__u64)end + 1 - (__u64)first != bi->queue_bytes)
		bi->pc_flags |= PCF_NONCONTIG;
}

/* Sends one pc_rec of bio key (and bi when kind is PC_QUEUE). */
static __always_inline void pc_send(__u8 kind, __u16 flags, __u64 key, struct bio_info *bi, __u64 cause, __u32 status)
{
	if (!pc_records)
		return;
	struct pc_rec *r = bpf_ringbuf_reserve(&pc_ring, sizeof(*r), 0);
	if (!r) {
		count(BC_PC_LOST);
		return;
	}
	r->type = PC_REC_TYPE;
	r->kind = kind;
	r->flags = flags | bi->pc_flags;
	r->cpu = bpf_get_smp_processor_id();
	r->time = bpf_ktime_get_boot_ns(); /* the syscall records' clock */
	r->bio = key;
	r->ino = bi->inode;
	r->dev = bi->ino_dev;
	r->off = bi->file_off;
	r->bytes = bi->queue_bytes;
	r->cause = cause;
	r->pid = kind == PC_QUEUE ? bi->pid : status;
	r->bdev = bi->dev;
	r->sector = bi->queue_sector - bi->start_sect;
	__u64 wake = bpf_ringbuf_query(&pc_ring, BPF_RB_AVAIL_DATA) >= pc_wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(r, wake);
}

/* ---- page-cache reads in flight per file (cur_syscall.h) ---- */

#define REQ_OP_MASK 0xff
#define REQ_OP_READ 0

static __always_inline void inode_io_queued(struct bio_info *bi)
{
	struct inode_io_key k = { .ino = bi->inode, .dev = bi->ino_dev };
	struct inode_io *io = bpf_map_lookup_elem(&inode_io, &k);
	if (!io) {
		struct inode_io zero = {};
		bpf_map_update_elem(&inode_io, &k, &zero, BPF_NOEXIST);
		io = bpf_map_lookup_elem(&inode_io, &k);
		if (!io)
			return;
	}
	__sync_fetch_and_add(&io->inflight, 1);
	bi->flags |= RF_INODE_READ;
}

static __always_inline void inode_io_done(struct bio_info *bi)
{
	if (!(bi->flags & RF_INODE_READ))
		return;
	struct inode_io_key k = { .ino = bi->inode, .dev = bi->ino_dev };
	struct inode_io *io = bpf_map_lookup_elem(&inode_io, &k);
	if (!io)
		return;
	io->last_done = bpf_ktime_get_boot_ns(); /* the syscall records' clock */
	if (io->inflight)
		__sync_fetch_and_add(&io->inflight, (__u32)-1); /* -mcpu=v1: no atomic sub */
}

/* Fills what r learns from the bio's queue: submitter, cause, inode,
 * stacks, flags. */
static __always_inline void from_queue(struct block_rec *r, struct bio_info *bi)
{
	r->queue_ts = bi->queue_ts;
	r->cause = bi->cause;
	r->inode = bi->inode;
	r->ino_dev = bi->ino_dev;
	r->pid = bi->pid;
	r->tid = bi->tid;
	r->cpu = bi->cpu;
	r->rflags |= bi->flags & ~RF_INODE_READ;
	__builtin_memcpy(r->comm, bi->comm, sizeof(r->comm));
	r->ustack = bi->ustack;
	r->kstack = bi->kstack;
}

/* Sends the record of a tracked bio whose completion was never seen (its
 * address is being queued again) and forgets it. */
static __always_inline void forget_unseen(__u64 key)
{
	struct bio_info *bi = bpf_map_lookup_elem(&bios, &key);
	if (!bi)
		return;
	inode_io_done(bi);
	if (bi->flags & RF_INODE_READ)
		pc_send(PC_DONE, PCF_UNSEEN, key, bi, 0, 0);
	if (bi->flags & RF_FILL_ONLY) {
		count(BC_FILL_UNSEEN);
		bpf_map_delete_elem(&bios, &key);
		return;
	}
	count(BC_UNSEEN);
	struct block_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(BC_LOST);
		bpf_map_delete_elem(&bios, &key);
		return;
	}
	r->bio = key;
	r->rq = 0;
	r->issue_ts = 0;
	r->done_ts = now(); /* when the loss was found: its completion came before */
	r->sector = bi->queue_sector - bi->start_sect;
	r->bytes = bi->queue_bytes;
	r->opf = bi->opf;
	r->dev = bi->dev;
	r->done_cpu = 0;
	r->done_tid = 0;
	r->status = 0;
	r->rflags = RF_UNSEEN | RF_NOISSUE;
	from_queue(r, bi);
	bpf_ringbuf_submit(r, rb_flags());
	bpf_map_delete_elem(&bios, &key);
}

/* ---- queue side ---- */

static __always_inline __u64 key_of(struct bio *bio) { return (__u64)bio; }

/* A page-cache read the pid filter leaves out: tracked only until it
 * completes, for the provenance of traced processes' reads of its pages
 * (they may wait for it, or find its pages). No block event. */
static __always_inline void fill_only(__u64 key, struct bio_info *bi)
{
	bi->flags |= RF_FILL_ONLY | RF_INODE_READ;
	bi->pc_flags |= PCF_UNTRACED;
	if (bpf_map_update_elem(&bios, &key, bi, BPF_ANY)) {
		count(BC_MAP_FULL);
		return;
	}
	inode_io_queued(bi);
	pc_send(PC_QUEUE, 0, key, bi, 0, 0);
	count(BC_FILL_ONLY);
}

SEC("raw_tracepoint/block_bio_queue")
int block_bio_queue(struct bpf_raw_tracepoint_args *ctx)
{
	struct bio *bio = (struct bio *)ctx->args[0];
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;

	forget_unseen((__u64)bio);
	if (self_tgid && tgid == self_tgid)
		return 0;

	struct bio_info bi = {};
	bi.queue_ts = now();
	bi.pid = tgid;
	bi.tid = tid;
	bi.cpu = bpf_get_smp_processor_id();
	bi.queue_sector = BPF_CORE_READ(bio, bi_iter.bi_sector);
	bi.queue_bytes = BPF_CORE_READ(bio, bi_iter.bi_size);
	bi.opf = BPF_CORE_READ(bio, bi_opf);
	bi.dev = BPF_CORE_READ(bio, bi_bdev, bd_dev);
	bi.start_sect = BPF_CORE_READ(bio, bi_bdev, bd_start_sect);

	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	if (BPF_CORE_READ(task, flags) & PF_KTHREAD)
		bi.flags |= RF_KTHREAD;
	unsigned long mapping = 0;
	if (bio_pinned_bit < 16 && (BPF_CORE_READ(bio, bi_flags) & (1U << bio_pinned_bit)))
		bi.flags |= RF_PINNED;
	else
		mapping = bio_inode(bio, &bi);
	bool inode_read = bi.inode && (bi.opf & REQ_OP_MASK) == REQ_OP_READ;
	if (inode_read && pc_records)
		bio_file_range(bio, &bi, mapping);

	struct syscall_state *st = cur_thread_state();
	struct syscall_cause *cs = st ? &st->cause : NULL;
	if (cs && !cs->id)
		cs = NULL; /* the thread's entry, between two syscalls */

	if (filter_pids && !cs && !bpf_map_lookup_elem(&pid_filter, &tgid)) {
		struct inode_key k = { .ino = bi.inode, .dev = bi.ino_dev };
		if (!(bi.flags & RF_KTHREAD) || !bi.inode || !bpf_map_lookup_elem(&dirty_inodes, &k)) {
			count(BC_FILTERED);
			if (inode_read && pc_records)
				fill_only(key_of(bio), &bi);
			return 0;
		}
		bi.flags |= RF_DIRTY_MATCH;
	}

	if (cs && cs->submitter) {
		/* An io_uring worker doing a request's I/O: the bio is the
		 * submitting thread's (its name comes from user space). */
		bi.tid = cs->submitter;
		bi.flags |= RF_WORKER;
	} else {
		bpf_get_current_comm(bi.comm, sizeof(bi.comm));
	}
	__u64 key = (__u64)bio;
	/* --stacks: who queued it (a kernel thread has no user stack). */
	bi.ustack = -1;
	bi.kstack = -1;
	if ((stack_mode & STACKS_USER) && !(bi.flags & RF_KTHREAD))
		bi.ustack = unwind_mode ? unwind_user_quiet() : bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (stack_mode & STACKS_KERNEL)
		bi.kstack = bpf_get_stackid(ctx, &stacks, 0);
	if (inode_read)
		bi.flags |= RF_INODE_READ;
	if (bpf_map_update_elem(&bios, &key, &bi, BPF_ANY)) {
		count(BC_MAP_FULL);
		return 0;
	}
	if (inode_read)
		inode_io_queued(&bi);
	/* Cause only once the bio is tracked, so nr_bios counts what will show. */
	if (cs) {
		struct bio_info *p = bpf_map_lookup_elem(&bios, &key);
		if (p)
			p->cause = cs->id;
		__sync_fetch_and_add(&cs->nr_bios, 1);
		__sync_fetch_and_add(&cs->bio_bytes, (__u64)bi.queue_bytes);
	}
	if (inode_read)
		pc_send(PC_QUEUE, 0, key, &bi, cs ? cs->id : 0, 0);
	count(BC_QUEUED);
	return 0;
}

SEC("raw_tracepoint/block_split")
int block_split(struct bpf_raw_tracepoint_args *ctx)
{
	struct bio *child = (struct bio *)ctx->args[0];
	__u64 parent = (__u64)BPF_CORE_READ(child, bi_private);
	forget_unseen((__u64)child);
	struct bio_info *pi = bpf_map_lookup_elem(&bios, &parent);
	if (!pi) {
		count(BC_SPLIT_ORPHAN);
		return 0;
	}
	struct bio_info bi = *pi;
	bi.flags |= RF_SPLIT;
	bi.part_bytes = 0;
	bi.part_sector = 0;
	bi.queue_sector = BPF_CORE_READ(child, bi_iter.bi_sector);
	bi.queue_bytes = BPF_CORE_READ(child, bi_iter.bi_size);
	/* The parent keeps the remainder. */
	struct bio *pb = (struct bio *)parent;
	pi->queue_sector = BPF_CORE_READ(pb, bi_iter.bi_sector);
	pi->queue_bytes = BPF_CORE_READ(pb, bi_iter.bi_size);
	if (!(pi->pc_flags & PCF_NONCONTIG))
		pi->file_off += bi.queue_bytes; /* the child is the front part */
	__u64 key = (__u64)child;
	if (bpf_map_update_elem(&bios, &key, &bi, BPF_ANY)) {
		count(BC_MAP_FULL);
		return 0;
	}
	if (bi.flags & RF_INODE_READ) {
		inode_io_queued(&bi);
		pc_send(PC_QUEUE, 0, key, &bi, bi.cause, 0);
		pc_send(PC_QUEUE, PCF_SPLIT, parent, pi, pi->cause, 0);
	}
	if (bi.flags & RF_FILL_ONLY)
		return 0;
	/* The syscall that queued the parent caused this child too. */
	if (bi.cause) {
		/* Split in the submitter's context, still inside its syscall. */
		struct syscall_state *st = cur_thread_state();
		if (st && st->cause.id == bi.cause)
			__sync_fetch_and_add(&st->cause.nr_bios, 1);
	}
	count(BC_SPLIT);
	return 0;
}

SEC("raw_tracepoint/block_bio_remap")
int block_bio_remap(struct bpf_raw_tracepoint_args *ctx)
{
	/* A stacking driver moved a tracked bio (md, dm in place): its
	 * device and sector no longer say which bio it is. (A partition's
	 * remap comes before the queue: nothing tracked yet.) */
	__u64 key = ctx->args[0];
	struct bio_info *bi = bpf_map_lookup_elem(&bios, &key);
	if (bi)
		bi->flags |= RF_REMAPPED;
	count(BC_REMAP);
	return 0;
}

SEC("raw_tracepoint/writeback_mark_inode_dirty")
int writeback_mark_inode_dirty(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!filter_pids || !bpf_map_lookup_elem(&pid_filter, &tgid))
		return 0;
	struct inode *inode = (struct inode *)ctx->args[0];
	struct inode_key k = {
		.ino = BPF_CORE_READ(inode, i_ino),
		.dev = BPF_CORE_READ(inode, i_sb, s_dev),
	};
	if (bpf_map_update_elem(&dirty_inodes, &k, &tgid, BPF_ANY))
		count(BC_DIRTY_FULL);
	return 0;
}

/* ---- issue side ---- */

SEC("raw_tracepoint/block_rq_issue")
int block_rq_issue(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 rq = ctx->args[0];
	__u64 ts = now();
	if (bpf_map_update_elem(&rqs, &rq, &ts, BPF_ANY))
		count(BC_RQ_FULL);
	count(BC_ISSUE);
	return 0;
}

SEC("raw_tracepoint/block_rq_requeue")
int block_rq_requeue(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 rq = ctx->args[0];
	bpf_map_delete_elem(&rqs, &rq);
	count(BC_REQUEUE);
	return 0;
}

/* ---- completion side ---- */

struct walk {
	struct bio *bio;  /* next bio of the chain */
	__u64 rq;
	__u64 issue_ts;
	__u64 done_ts;
	__u64 rbflags;
	__u32 remaining;  /* bytes of this completion not yet assigned to bios */
	__u32 done_cpu;
	__u32 done_tid;
	__u16 status;
	__u16 extra;      /* flags added to every record */
};

/* Emits the record of one completed bio and forgets it. */
/* Whether the tracked entry bi describes bio, completing at sector: the
 * same direction and, unless a stacking driver moved it, the same device
 * and the sector it was queued at (or reached by partial completions). */
static __always_inline bool same_bio(struct bio_info *bi, struct bio *bio, __u64 sector)
{
	if ((bi->opf & REQ_OP_MASK) != (BPF_CORE_READ(bio, bi_opf) & REQ_OP_MASK))
		return false;
	if (bi->flags & RF_REMAPPED)
		return true;
	if (bi->dev != BPF_CORE_READ(bio, bi_bdev, bd_dev))
		return false;
	__u64 want = bi->queue_sector;
	if (bi->part_bytes)
		want = bi->part_sector + (bi->part_bytes >> 9);
	return sector == want;
}

static __always_inline void emit(struct walk *w, struct bio *bio, __u64 sector, __u32 bytes)
{
	__u64 key = (__u64)bio;
	struct bio_info *bi = bpf_map_lookup_elem(&bios, &key);

	if (bi && !same_bio(bi, bio, sector)) {
		/* Left by a bio whose completion was missed; this one's queue
		 * was not seen (filtered out, or missed too). */
		count(BC_STALE);
		forget_unseen(key);
		bi = NULL;
	}
	if (bi && (bi->flags & RF_INODE_READ))
		pc_send(PC_DONE, 0, key, bi, 0, w->status);
	if (bi && (bi->flags & RF_FILL_ONLY)) {
		inode_io_done(bi);
		bpf_map_delete_elem(&bios, &key);
		return;
	}
	if (!bi && filter_pids) {
		/* filtered out at queue, or queued before the trace */
		count(BC_NOSTART);
		return;
	}
	struct block_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(BC_LOST);
		if (bi) {
			inode_io_done(bi);
			bpf_map_delete_elem(&bios, &key);
		}
		return;
	}
	struct block_device *bdev = BPF_CORE_READ(bio, bi_bdev);
	r->bio = key;
	r->rq = w->rq;
	r->issue_ts = w->issue_ts;
	r->done_ts = w->done_ts;
	r->opf = BPF_CORE_READ(bio, bi_opf);
	r->dev = BPF_CORE_READ(bdev, bd_dev);
	r->done_cpu = w->done_cpu;
	r->done_tid = w->done_tid;
	r->status = w->status;
	r->rflags = w->extra;
	if (bi) {
		from_queue(r, bi);
		inode_io_done(bi);
		if (bi->part_bytes) {
			sector = bi->part_sector;
			bytes += bi->part_bytes;
		}
		bpf_map_delete_elem(&bios, &key);
	} else {
		r->queue_ts = 0;
		r->cause = 0;
		r->inode = 0;
		r->ino_dev = 0;
		r->pid = 0;
		r->tid = 0;
		r->cpu = 0;
		r->rflags |= RF_NOSTART;
		__builtin_memset(r->comm, 0, sizeof(r->comm));
		r->ustack = -1;
		r->kstack = -1;
		count(BC_NOSTART);
	}
	r->sector = sector - BPF_CORE_READ(bdev, bd_start_sect);
	r->bytes = bytes;
	bpf_ringbuf_submit(r, w->rbflags);
	count(BC_COMPLETED);
}

static long walk_one(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	struct bio *bio = w->bio;
	if (!bio)
		return 1;
	__u32 size = BPF_CORE_READ(bio, bi_iter.bi_size);
	__u64 sector = BPF_CORE_READ(bio, bi_iter.bi_sector);
	if (size > w->remaining) {
		/* Partly done: remember what is, report it with the rest later. */
		if (w->remaining) {
			__u64 key = (__u64)bio;
			struct bio_info *bi = bpf_map_lookup_elem(&bios, &key);
			if (bi && same_bio(bi, bio, sector)) {
				if (!bi->part_bytes)
					bi->part_sector = sector;
				bi->part_bytes += w->remaining;
				bi->flags |= RF_PARTIAL;
			}
			count(BC_PARTIAL);
			w->remaining = 0;
		}
		w->bio = 0;
		return 1;
	}
	w->remaining -= size;
	w->bio = BPF_CORE_READ(bio, bi_next);
	emit(w, bio, sector, size);
	return 0;
}

SEC("raw_tracepoint/block_rq_complete")
int block_rq_complete(struct bpf_raw_tracepoint_args *ctx)
{
	struct request *rq = (struct request *)ctx->args[0];
	__u64 key = (__u64)rq;
	struct walk w = {};

	w.done_ts = now();
	w.rq = key;
	w.status = (__u16)ctx->args[1];
	w.remaining = (__u32)ctx->args[2];
	w.done_cpu = bpf_get_smp_processor_id();
	w.done_tid = (__u32)bpf_get_current_pid_tgid();
	w.rbflags = rb_flags();
	w.bio = BPF_CORE_READ(rq, bio);
	bool final = w.remaining >= BPF_CORE_READ(rq, __data_len);

	__u64 *issue = bpf_map_lookup_elem(&rqs, &key);
	if (issue)
		w.issue_ts = *issue;
	else
		w.extra |= RF_NOISSUE;
	if (!w.bio) {
		count(BC_RQ_NOBIO);
		bpf_map_delete_elem(&rqs, &key);
		return 0;
	}
	bpf_loop(MAX_CHAIN, walk_one, &w, 0);
	if (w.bio)
		count(BC_CHAIN_LONG);
	/* Forget the request once it is done: request structs are reused. */
	if (final)
		bpf_map_delete_elem(&rqs, &key);
	return 0;
}

SEC("raw_tracepoint/block_bio_complete")
int block_bio_complete(struct bpf_raw_tracepoint_args *ctx)
{
	struct bio *bio = (struct bio *)ctx->args[1];
	struct walk w = {};

	w.done_ts = now();
	w.status = BPF_CORE_READ(bio, bi_status);
	w.done_cpu = bpf_get_smp_processor_id();
	w.done_tid = (__u32)bpf_get_current_pid_tgid();
	w.rbflags = rb_flags();
	w.extra = RF_NOISSUE | RF_BIO_COMPLETE;
	/* The iterator may be consumed by now: use what was queued. */
	__u64 key = (__u64)bio;
	struct bio_info *bi = bpf_map_lookup_elem(&bios, &key);
	if (bi)
		emit(&w, bio, bi->queue_sector, bi->queue_bytes);
	else
		emit(&w, bio, BPF_CORE_READ(bio, bi_iter.bi_sector), BPF_CORE_READ(bio, bi_iter.bi_size));
	return 0;
}
