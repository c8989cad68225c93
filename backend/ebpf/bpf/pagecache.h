/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * pagecache.h: where a read's bytes came from (page-cache provenance).
 *
 * The block object (blockio.bpf.c) reports every bio that fills page-cache
 * pages of a file from disk twice, into the syscall object's ring buffer
 * (rb, shared through MapReplacements like cur_syscall): when it is
 * queued (PC_QUEUE: the file, the byte range it fills, who queued it and
 * in which system call) and when it completes (PC_DONE). The syscall
 * object reports pages of such files leaving the page cache (PC_EVICT,
 * from filemap:mm_filemap_delete_from_page_cache). User space
 * (backend/ebpf/provenance.go) keeps the ranges and classifies each read
 * by the ranges it returned.
 *
 * Why the syscall ring: one ring is consumed in the order its records were
 * reserved. A completion reserves PC_DONE before its pages are marked up to
 * date, so a read that returned those pages reserves its own record after
 * it: user space always knows a read's fills before the read.
 */
#ifndef IOTRACE_PAGECACHE_H
#define IOTRACE_PAGECACHE_H

/* struct pc_rec.kind */
enum pc_kind {
	PC_QUEUE = 1, /* a bio filling [off, off+bytes) of the file was queued */
	PC_DONE = 2,  /* that bio completed (status), or its completion was not seen (PCF_UNSEEN) */
	PC_EVICT = 3, /* pages [off, off+bytes) of the file left the page cache */
};

/* struct pc_rec.flags */
enum pc_flags {
	PCF_SPLIT = 1 << 0,     /* PC_QUEUE of a split: replaces the bio's range */
	PCF_NONCONTIG = 1 << 1, /* the bio's pages are not one contiguous range of the file: off..off+bytes bounds them */
	PCF_UNTRACED = 1 << 2,  /* queued by a process the pid filter leaves out (no block event of its own) */
	PCF_UNSEEN = 1 << 3,    /* PC_DONE: its completion never reached the programs; done by h_time */
};

/* Layout: the first 16 bytes are struct rec_hdr of records.h (type
 * REC_PAGECACHE), so the syscall ring's reader dispatches it like its own
 * records. */
struct pc_rec {
	__u8 type;    /* REC_PAGECACHE (10) */
	__u8 kind;    /* enum pc_kind */
	__u16 flags;  /* enum pc_flags */
	__u32 cpu;
	__u64 time;   /* bpf_ktime_get_boot_ns(): queue, completion, eviction */
	__u64 bio;    /* struct bio *: pairs PC_QUEUE and PC_DONE (0 for PC_EVICT) */
	__u64 ino;    /* the file */
	__u64 off;    /* first byte of the file */
	__u64 cause;  /* PC_QUEUE: ID of the system call that queued it (raw, as syscall_rec.id), 0 when none */
	__u32 bytes;  /* PC_QUEUE, PC_EVICT: length of the range */
	__u32 dev;    /* kernel dev_t of the file's file system (s_dev) */
	__u32 pid;    /* PC_QUEUE: submitter's tgid; PC_DONE: blk_status_t */
	__u32 bdev;   /* PC_QUEUE: kernel dev_t of the bio's block device (0 for PC_EVICT) */
	__u64 sector; /* PC_QUEUE: the bio's first sector, relative to bdev: the completion
	               * witness finds it by this when no program saw it complete */
};

#define PC_REC_TYPE 10 /* REC_PAGECACHE in records.h */

_Static_assert(sizeof(struct pc_rec) == 72, "pc_rec size");

#endif /* IOTRACE_PAGECACHE_H */
