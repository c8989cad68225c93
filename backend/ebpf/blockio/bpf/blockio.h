/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * blockio.h: what the block I/O programs (blockio.bpf.c) send to user space
 * and count. The Go decoder in backend/ebpf/blockio/record.go mirrors these
 * layouts byte for byte (little endian); layout_linux_test.go checks them
 * against the bpf2go-generated types.
 */
#ifndef IOTRACE_BLOCKIO_H
#define IOTRACE_BLOCKIO_H

#define BLK_COMM_LEN 16

/* struct block_rec.rflags and struct bio_info.flags */
enum blk_rec_flags {
	RF_NOSTART = 1 << 0,       /* completed, but never seen queued (or split) */
	RF_SPLIT = 1 << 1,         /* a split child: attributed through its parent */
	RF_KTHREAD = 1 << 2,       /* queued by a kernel thread (writeback, journal) */
	RF_PINNED = 1 << 3,        /* user pages pinned: direct I/O */
	RF_NOISSUE = 1 << 4,       /* never seen issued to the driver */
	RF_BIO_COMPLETE = 1 << 5,  /* completed by block_bio_complete (bio-based device) */
	RF_PARTIAL = 1 << 6,       /* its request completed in several steps */
	RF_DIRTY_MATCH = 1 << 7,   /* kept by the pid filter: it writes back a file a traced process dirtied */
	RF_SPLIT_ORPHAN = 1 << 8,  /* a split child whose parent was never seen queued */
	RF_INODE_READ = 1 << 9,    /* counted in inode_io (a page-cache read): uncount at completion */
	RF_WORKER = 1 << 10,       /* queued by an io_uring worker for the thread in tid */
	RF_UNSEEN = 1 << 11,       /* its completion never reached the programs: its address was reused */
	RF_REMAPPED = 1 << 12,     /* moved to another device or sector after it was queued (md, dm in place) */
	RF_FILL_ONLY = 1 << 13,    /* a page-cache read of an untraced process: tracked for provenance only, no block event */
};

/* One bio, from queue to completion. */
struct block_rec {
	__u64 bio;      /* struct bio address: the pairing key */
	__u64 rq;       /* struct request address (0: bio-based completion) */
	__u64 queue_ts; /* queued (0 with RF_NOSTART) */
	__u64 issue_ts; /* its request issued to the driver (0 with RF_NOISSUE) */
	__u64 done_ts;  /* completed */
	__u64 cause;    /* ID of the syscall event that queued it, 0 when none */
	__u64 sector;   /* first sector, relative to the device dev */
	__u64 inode;    /* inode whose page-cache pages it carries, 0 when none */
	__u32 bytes;
	__u32 opf;      /* bio->bi_opf: req_op | req_flag_bits */
	__u32 dev;      /* kernel dev_t of the device it was submitted to (a partition) */
	__u32 ino_dev;  /* kernel dev_t of inode's file system (s_dev) */
	__u32 pid;      /* submitter: tgid */
	__u32 tid;      /* submitter: thread */
	__u32 cpu;      /* CPU it was queued on */
	__u32 done_cpu; /* CPU it completed on */
	__u32 done_tid; /* thread current at completion (diagnostics only) */
	__u16 status;   /* blk_status_t of the completion */
	__u16 rflags;   /* enum blk_rec_flags */
	char comm[BLK_COMM_LEN]; /* submitter's comm */
	__s32 ustack;   /* submitter's user stack at queue (stacks map), or -errno (-1: not asked) */
	__s32 kstack;   /* kernel stack at queue, likewise */
};

/* Per-CPU counters (array index). Mirrored in counters.go. */
enum blk_counter {
	BC_LOST,            /* block records lost: ring buffer reserve failed */
	BC_QUEUED,          /* bios seen queued and tracked */
	BC_FILTERED,        /* bios not tracked: the pid filter excluded them */
	BC_MAP_FULL,        /* bios not tracked: in-flight map update failed */
	BC_SPLIT,           /* split children tracked */
	BC_SPLIT_ORPHAN,    /* split children whose parent was not tracked */
	BC_REMAP,           /* bios remapped (partition, device-mapper) */
	BC_ISSUE,           /* requests issued */
	BC_REQUEUE,         /* requests requeued */
	BC_RQ_NOBIO,        /* requests completed without bios (flush requests) */
	BC_NOSTART,         /* completions of bios never seen queued */
	BC_CHAIN_LONG,      /* request bio chains longer than the walk bound */
	BC_COMPLETED,       /* block records produced */
	BC_DIRTY_FULL,      /* dirtied inode not remembered: map update failed */
	BC_UNSEEN,          /* tracked bios whose completion never reached the programs */
	BC_STALE,           /* completions of another bio than the one tracked at that address */
	BC_PARTIAL,         /* partial completions: the rest of the bio is awaited */
	BC_FILL_ONLY,       /* page-cache reads of untraced processes tracked for provenance only */
	BC_PC_LOST,         /* page-cache provenance records lost: the syscall ring buffer was full */
	BC_FILL_UNSEEN,     /* of those, completions never seen */
	BC_RQ_FULL,         /* requests whose issue time was not kept: map update failed */
	BC_MAX,
};

#endif /* IOTRACE_BLOCKIO_H */
