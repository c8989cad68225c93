/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * records.h: what the iotrace BPF programs send to user space through the
 * ring buffer. Every record starts with struct rec_hdr. The Go decoder in
 * backend/ebpf/record.go mirrors these layouts byte for byte (little
 * endian); record_layout_linux_test.go checks them against the
 * bpf2go-generated types.
 */
#ifndef IOTRACE_RECORDS_H
#define IOTRACE_RECORDS_H

#define PATH_CAP 4096 /* bytes of a path read from user memory, NUL included */
#define ARGS_CAP 1024 /* bytes of an exec'd command line */
#define COMM_LEN 16

enum rec_type {
	REC_SYSCALL = 1, /* one system call, enter and exit paired */
	REC_PATH = 2,    /* a path argument of a system call, sent before it */
	REC_FORK = 3,    /* a new process (not a thread) */
	REC_EXEC = 4,    /* a process replaced its image */
	REC_EXIT = 5,    /* the last thread of a process exited */
	REC_URING = 6,   /* one io_uring request, submission and completion */
	REC_AIO = 7,     /* one Linux AIO (libaio) request, io_submit to its reaping */
	REC_EXEC_MAPS = 8, /* --stacks: the code exec mapped (the program's and its interpreter's text) */
	REC_STACK = 9,   /* --stacks: a stack sent inline, its stacks-map bucket held another */
	REC_PAGECACHE = 10, /* page-cache provenance: a fill queued or done, pages evicted (pagecache.h) */
	REC_USTACK_COPY = 11, /* --stacks: registers and user stack, for user space to walk (unwind.h) */
	REC_KICK = 12,   /* no data: wakes the reader, the per-CPU slots are filling (struct kick_rec) */
};

/* struct syscall_rec.sflags */
enum sys_flags {
	SF_PATH0_LATE = 1 << 0,   /* path 0 read at exit (not resident at enter) */
	SF_PATH1_LATE = 1 << 1,   /* path 1 read at exit */
	SF_PATH0_FAILED = 1 << 2, /* path 0 could not be read */
	SF_PATH1_FAILED = 1 << 3, /* path 1 could not be read */
	SF_HAVE_FILE = 1 << 4,    /* pos/ino/dev/fflags hold the fd's file */
	SF_CAUSE = 1 << 5,        /* nr_bios/bio_bytes are valid (block tracing on) */
	SF_IOV_PARTIAL = 1 << 6,  /* size sums only the first IOV_CAP iovecs */
	SF_IOWAIT = 1 << 8,       /* the thread slept waiting for I/O during the call */
	SF_WAITED_IO = 1 << 9,    /* queued no bio, slept for I/O while the file had read I/O in flight */
	SF_COMM = 1 << 10,        /* comm is set: the thread's first record, or its name changed */
	SF_REG = 1 << 11,         /* the fd's file is a regular file (SF_HAVE_FILE) */
	SF_BDEV_FS = 1 << 12,     /* on a file system with a block device (its page cache is filled by bios) */
	SF_MEM_FS = 1 << 13,      /* on tmpfs or ramfs: its pages live in memory only */
};

struct rec_hdr {
	__u8 type;  /* enum rec_type */
	__u8 pad;
	__u16 kind; /* syscall kind (the attach cookie's low bits) */
	__u32 cpu;  /* CPU the operation started on */
	__u64 time; /* bpf_ktime_get_boot_ns() at start */
};

struct syscall_rec {
	struct rec_hdr h;
	__u64 id;  /* event ID: cpu << 48 | per-CPU sequence; bit 63 clear */
	__u64 dur; /* exit time - enter time */
	__u32 pid; /* tgid */
	__u32 tid;
	__s64 ret;
	__u64 args[6];
	__u64 size; /* bytes requested (sum of iovecs for vector I/O) */
	__s64 pos;  /* file position at enter (SF_HAVE_FILE), for read/write without offset */
	__u64 ino;  /* inode of the fd's file (SF_HAVE_FILE) */
	__u32 dev;  /* kernel dev_t of the fd's file system (SF_HAVE_FILE) */
	__u32 fflags;    /* file->f_flags (SF_HAVE_FILE) */
	__u32 nr_bios;   /* bios queued during the call (SF_CAUSE) */
	__u32 sflags;    /* enum sys_flags */
	__u64 bio_bytes; /* bytes of those bios (SF_CAUSE) */
	char comm[COMM_LEN]; /* with SF_COMM only: else the thread's last one */
	__s32 ustack;        /* user stack in the stacks map, or -errno (-1: not asked) */
	__s32 kstack;        /* kernel stack, likewise */
};

struct path_rec {
	struct rec_hdr h;
	__u64 id; /* the syscall's event ID */
	__u32 tid;
	__u16 len;  /* bytes in path, NUL included */
	__u8 index; /* 0: first path argument, 1: second */
	__u8 late;  /* 1 when read at exit */
	char path[PATH_CAP];
};

/* struct fork_rec.cflags */
enum clone_flags {
	CF_FILES_SHARED = 1 << 0, /* child shares the fd table (CLONE_FILES) */
	CF_FS_SHARED = 1 << 1,    /* child shares cwd/root (CLONE_FS) */
};

struct fork_rec {
	struct rec_hdr h;
	__u32 ppid, ptid; /* parent tgid and thread */
	__u32 pid, tid;   /* child tgid (== tid) */
	__u64 start;      /* child start_boottime */
	__u32 cflags;     /* enum clone_flags */
	__u32 pad;
	char comm[COMM_LEN];
};

struct exec_rec {
	struct rec_hdr h;
	__u32 pid, old_pid; /* tgid after exec; thread id before (a non-leader thread may exec) */
	__u64 start;        /* start_boottime of the process */
	__u16 name_len;     /* bytes of filename, NUL included */
	__u16 args_len;     /* bytes of the NUL-separated argv */
	__u32 pad;
	char comm[COMM_LEN];
	char data[PATH_CAP + ARGS_CAP]; /* filename, then argv at data[name_len] */
};

/* One code mapping: a VMA's range, file offset and file. */
struct code_map {
	__u64 start, end;
	__u64 pgoff; /* file offset of start, in bytes */
	__u64 ino;
	__u32 dev;   /* kernel dev_t of the file's file system */
	__u32 pad;
};

/* After an exec (--stacks): what the kernel mapped itself, so that frames
 * in a program that exits before user space reads its maps still have
 * their module. exe: the program's text (mm->start_code); interp: the
 * text holding the new instruction pointer (the ELF interpreter's, or the
 * program's when static); a range of 0 when not found. */
struct exec_maps_rec {
	struct rec_hdr h;
	__u32 pid;
	__u32 pad;
	struct code_map exe, interp;
};

/* A user stack sent with its event (the event ID), before it, when
 * bpf_get_stackid found its bucket in the stacks map taken by another
 * stack: the event's record then says -EEXIST and the frames are here. */
struct stack_rec {
	struct rec_hdr h;
	__u64 id;     /* the event's ID */
	__u32 nr;     /* frames */
	__u32 stop;   /* why the walk ended (unwind.h's enum unwind_stop; 255: not known) */
	__u64 ips[127]; /* MAX_STACK_DEPTH: innermost first */
};

/* Bytes of user stack a ustack_copy_rec carries at most. */
#define UNWIND_COPY_MAX 16384

/* The user registers and stack of an event's thread, sent before the
 * event when the stack could not be walked in the kernel (a mapped
 * file's unwind table not loaded yet, see unwind.h): user space walks
 * the copy. The event's record says USTACK_COPIED. */
struct ustack_copy_rec {
	struct rec_hdr h;
	__u64 id;          /* the event's ID */
	__u64 pc, sp, fp;  /* the user registers at the kernel entry */
	__u64 miss_ino;    /* the file whose table was missing (0: none) */
	__u32 miss_dev;    /* its kernel dev_t */
	__u32 len;         /* bytes of stack in data, from sp */
	__u64 miss_start;  /* its mapping's start */
	__u64 miss_size;   /* its size */
	__u8 data[UNWIND_COPY_MAX];
};

struct exit_rec {
	struct rec_hdr h;
	__u32 pid, tid;
	__u64 start;
	__s32 code; /* exit_code (wait status) */
	__u32 pad;
};

struct uring_rec {
	struct rec_hdr h; /* time: submission */
	__u64 id;
	__u64 dur;
	__u32 pid, tid; /* submitter */
	__u64 user_data;
	__u64 req; /* struct io_kiocb address */
	__s64 off; /* offset of read/write opcodes */
	__s32 res;
	__s32 fd;
	__u32 len; /* length of read/write opcodes */
	__u8 opcode;
	__u8 more; /* 1: a multishot request's completion, more to come */
	__u8 pad[2];
	char comm[COMM_LEN];
	__u32 nr_bios;   /* bios the request queued (caused) */
	__u8 caused;     /* 1: nr_bios/bio_bytes are valid (block tracing on) */
	__u8 uflags;     /* enum uring_flags */
	__u8 pad2[2];
	__u64 bio_bytes; /* bytes of those bios */
	__u64 ino;       /* inode of fd's file at submission (UF_HAVE_FILE) */
	__u32 dev;       /* kernel dev_t of its file system (UF_HAVE_FILE) */
	__u32 fflags;    /* its file->f_flags (UF_HAVE_FILE) */
	__s32 ustack;    /* submitter's user stack (stacks map), or -errno (-1: not asked) */
	__u32 pad3;
};

/* struct uring_rec.uflags */
enum uring_flags {
	UF_FIXED = 1 << 0,     /* fd is an index into the ring's registered files, not a descriptor */
	UF_HAVE_FILE = 1 << 1, /* ino/dev/fflags hold the descriptor's file at submission */
};

/* One struct iocb of io_submit, from submission to the io_getevents (or
 * io_pgetevents) call that reaped its completion. The in-flight map holds
 * the same struct, filled at submission. */
struct aio_rec {
	struct rec_hdr h; /* time: io_submit enter */
	__u64 id;
	__u64 dur;        /* reap time - submission time */
	__u32 pid, tid;   /* submitter */
	__u64 data;       /* iocb.aio_data */
	__u64 iocb;       /* user address of the struct iocb */
	__s64 off;        /* iocb.aio_offset */
	__s64 res;        /* io_event.res: bytes or -errno */
	__u64 nbytes;     /* bytes requested (sum of the iovecs of PREADV/PWRITEV) */
	__u64 ctx;        /* aio_context_t */
	__u64 bio_bytes;  /* bytes of the bios the request queued (caused) */
	__u32 nr_bios;    /* bios the request queued (caused) */
	__s32 fd;         /* iocb.aio_fildes */
	__u16 opcode;     /* iocb.aio_lio_opcode (IOCB_CMD_*) */
	__u8 caused;      /* 1: nr_bios/bio_bytes are valid */
	__u8 aflags;      /* enum aio_flags */
	__u32 fflags;     /* file->f_flags of fd at submission (AF_HAVE_FILE) */
	char comm[COMM_LEN];
	__u64 ino;        /* inode of fd's file at submission (AF_HAVE_FILE) */
	__u32 dev;        /* kernel dev_t of its file system (AF_HAVE_FILE) */
	__s32 ustack;     /* submitter's user stack (stacks map), or -errno (-1: not asked) */
};

/* struct aio_rec.aflags */
enum aio_flags {
	AF_IOV_PARTIAL = 1 << 0, /* nbytes sums only the first IOV_CAP iovecs */
	AF_HAVE_FILE = 1 << 1,   /* fflags holds the fd's file flags */
	AF_UNREAPED = 1 << 2,    /* never reaped: sent when its process exited */
};

/* Per-CPU counters (array index). Mirrored in counters.go. */
enum counter {
	C_LOST_SYSCALL,     /* syscall records lost: ring buffer full */
	C_LOST_PATH,        /* path records lost: ring buffer full */
	C_LOST_PROC,        /* fork/exec/exit records lost: ring buffer full */
	C_LOST_URING,       /* io_uring records lost: ring buffer full */
	C_EXIT_NO_ENTER,    /* syscall exit without its enter */
	C_ENTER_NO_EXIT,    /* thread exited inside a traced syscall */
	C_KIND_MISMATCH,    /* exit of another syscall than the one entered */
	C_INFLIGHT_FULL,    /* enter not recorded: no thread state (slot taken, no task storage: memory) */
	C_PATH_RETRY,       /* path not resident at enter, retried at exit */
	C_PATH_FAILED,      /* path unreadable at enter and exit */
	C_URING_NO_SUBMIT,  /* io_uring completion without submission */
	C_URING_FULL,       /* io_uring in-flight map full */
	C_PIDS_FULL,        /* followed child not added: pid map full */
	C_LOST_AIO,         /* AIO records lost: ring buffer full */
	C_AIO_NO_SUBMIT,    /* AIO completion reaped without its submission */
	C_AIO_FULL,         /* AIO request not tracked: in-flight map full */
	C_AIO_OVER_CAP,     /* AIO requests beyond AIO_CAP in one io_submit */
	C_AIO_REAP_OVER_CAP, /* AIO completions beyond AIO_REAP_CAP in one reap */
	C_LOST_STACK,       /* inline stacks lost: ring buffer full */
	C_LOST_PC,          /* page-cache eviction records lost: ring buffer full */
	C_LOST_USTACK_COPY, /* user stack copies lost: ring buffer full */
	C_SLOTS_FULL,       /* syscall records sent to rb: the CPU's record slots full */
	C_STATE_STORAGE,    /* thread states made in task storage (slot taken, a non-leader exec, asynchronous first) */
	C_MAX,
};

/* struct kick_rec: the whole of a REC_KICK record. */
struct kick_rec {
	struct rec_hdr h;
};

/* Layouts the Go decoder (record.go) relies on. */
#define IOTRACE_OFF(t, f, o) _Static_assert(__builtin_offsetof(struct t, f) == o, #t "." #f)
IOTRACE_OFF(rec_hdr, time, 8);
IOTRACE_OFF(syscall_rec, id, 16);
IOTRACE_OFF(syscall_rec, ret, 40);
IOTRACE_OFF(syscall_rec, args, 48);
IOTRACE_OFF(syscall_rec, size, 96);
IOTRACE_OFF(syscall_rec, dev, 120);
IOTRACE_OFF(syscall_rec, nr_bios, 128);
IOTRACE_OFF(syscall_rec, bio_bytes, 136);
IOTRACE_OFF(syscall_rec, comm, 144);
IOTRACE_OFF(syscall_rec, ustack, 160);
_Static_assert(sizeof(struct syscall_rec) == 168, "syscall_rec size");
IOTRACE_OFF(path_rec, len, 28);
IOTRACE_OFF(path_rec, path, 32);
IOTRACE_OFF(fork_rec, start, 32);
IOTRACE_OFF(fork_rec, comm, 48);
_Static_assert(sizeof(struct fork_rec) == 64, "fork_rec size");
IOTRACE_OFF(exec_rec, name_len, 32);
IOTRACE_OFF(exec_rec, comm, 40);
IOTRACE_OFF(exec_rec, data, 56);
IOTRACE_OFF(exit_rec, code, 32);
_Static_assert(sizeof(struct exit_rec) == 40, "exit_rec size");
_Static_assert(sizeof(struct exec_maps_rec) == 104, "exec_maps_rec size");
IOTRACE_OFF(stack_rec, ips, 32);
IOTRACE_OFF(ustack_copy_rec, miss_ino, 48);
IOTRACE_OFF(ustack_copy_rec, len, 60);
IOTRACE_OFF(ustack_copy_rec, data, 80);
IOTRACE_OFF(uring_rec, user_data, 40);
IOTRACE_OFF(uring_rec, res, 64);
IOTRACE_OFF(uring_rec, opcode, 76);
IOTRACE_OFF(uring_rec, more, 77);
IOTRACE_OFF(uring_rec, comm, 80);
IOTRACE_OFF(uring_rec, nr_bios, 96);
IOTRACE_OFF(uring_rec, bio_bytes, 104);
IOTRACE_OFF(uring_rec, ino, 112);
IOTRACE_OFF(uring_rec, ustack, 128);
_Static_assert(sizeof(struct uring_rec) == 136, "uring_rec size");
IOTRACE_OFF(aio_rec, data, 40);
IOTRACE_OFF(aio_rec, res, 64);
IOTRACE_OFF(aio_rec, nr_bios, 96);
IOTRACE_OFF(aio_rec, opcode, 104);
IOTRACE_OFF(aio_rec, fflags, 108);
IOTRACE_OFF(aio_rec, comm, 112);
IOTRACE_OFF(aio_rec, ino, 128);
IOTRACE_OFF(aio_rec, ustack, 140);
_Static_assert(sizeof(struct aio_rec) == 144, "aio_rec size");

#endif /* IOTRACE_RECORDS_H */
