/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * unwind.h: the user stack of the current thread, walked with the unwind
 * tables user space builds from each mapped file's call frame information
 * (package unwind: .eh_frame, .debug_frame; frame pointers for Go
 * programs without them), so that code built without frame pointers
 * (Debian's libc and most of its packages) is walked through, and no
 * frame is guessed.
 *
 * Maps (filled by user space, backend/ebpf/unwind_linux.go):
 *   unwind_files  (dev, inode) of a mapped file -> its rows in unwind_rows
 *                 and its kind (CFI, frame pointers, none)
 *   unwind_rows   every loaded file's rows, {file offset, rule index},
 *                 sorted by offset within a file
 *   unwind_rules  the distinct rules (struct unwind_rule)
 *   ustacks       each distinct walked stack once, by a hash of its frames
 *
 * The walk starts from the registers the thread entered the kernel with
 * (task_pt_regs) and runs in a bpf_loop, one frame per iteration: the
 * frame's mapping (bpf_find_vma, kept while the next frame is in the same
 * one), its file's rows, a binary search for the frame's file offset,
 * then the rule: CFA = rsp or rbp + offset (or a PLT stub's, a signal
 * frame's, a realigned stack's), the return address and the saved rbp
 * read from the user stack. What cannot be walked ends the stack there,
 * with the reason (enum unwind_stop, package unwind's Stop) kept with
 * the frames. A return address in no executable mapping is not a frame:
 * the walk ends before it.
 *
 * A file whose table is not loaded yet (a program that just started,
 * before user space read its exec) cannot be walked here: the walk ends
 * with STOP_NOT_LOADED and the file it missed, and the syscall object
 * sends the registers and the stack to user space instead, which walks
 * that copy with the same tables and loads the missing one for the next
 * time (ustack_send.h).
 *
 * x86-64 (the loaders set it up only there; elsewhere the kernel's
 * frame-pointer walk is kept).
 *
 * Shared by the syscall object (which sends stacks ahead of events:
 * ustack_send.h) and the block object (which does not: a bio's event
 * comes from another ring buffer, later); the maps are the syscall
 * object's, replaced into the block object like cur_syscall. The kernel
 * types below are flavours of their own (CO-RE ignores the ___unw
 * suffix), so that each object's own definitions of the same types do
 * not clash. Include after bpf_helpers.h, bpf_core_read.h and
 * cur_syscall.h (MAX_STACK_DEPTH).
 */
#ifndef IOTRACE_UNWIND_H
#define IOTRACE_UNWIND_H

#define UNWIND_MAX_FRAMES MAX_STACK_DEPTH
#define UNWIND_SEARCH_STEPS 24 /* rows of one file: at most 2^24 */
#define VM_EXEC 0x4
#define PF_KTHREAD_ 0x00200000
#define EINPROGRESS 115
#define ENOENT 2
#define EBUSY 16
#define ENOMEM 12
#define EFAULT 14
#define ENOSPC 28
#ifndef EEXIST
#define EEXIST 17
#endif

/* ---- Kernel types, only the fields read (CO-RE) ---- */
struct task_struct___unw {
	unsigned int flags;
} __attribute__((preserve_access_index));
struct super_block___unw {
	__u32 s_dev;
} __attribute__((preserve_access_index));
struct inode___unw {
	unsigned long i_ino;
	struct super_block___unw *i_sb;
	long long i_size;
} __attribute__((preserve_access_index));
struct file___unw {
	struct inode___unw *f_inode;
} __attribute__((preserve_access_index));
struct vm_area_struct___unw {
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long vm_flags;
	unsigned long vm_pgoff;
	struct file___unw *vm_file;
} __attribute__((preserve_access_index));
struct pt_regs___unw_x86 {
	unsigned long bp;
	unsigned long ip;
	unsigned long sp;
} __attribute__((preserve_access_index));

/* Why a walk ended: package unwind's Stop, value for value. */
enum unwind_stop {
	STOP_COMPLETE = 0,
	STOP_DEPTH = 1,
	STOP_NO_CFI = 2,
	STOP_UNSUPPORTED = 3,
	STOP_SWITCH = 4,
	STOP_FP_UNKNOWN = 5,
	STOP_READ = 6,
	STOP_BAD_ADDRESS = 7,
	STOP_ANON = 8,
	STOP_NO_TABLE = 9,
	STOP_NOT_LOADED = 10,
	STOP_BACKWARDS = 11,
	STOP_MAP_FULL = 12,
	STOP_UNKNOWN = 255, /* a frame-pointer walk's: not known */
};

/* package unwind's CFAKind and RegKind */
enum unwind_cfa {
	CFA_SP = 1,
	CFA_FP = 2,
	CFA_DEREF_SP = 3,
	CFA_DEREF_FP = 4,
	CFA_PLT = 5,
	CFA_STOP = 6,
	CFA_NONE = 7,
	CFA_UNSUPPORTED = 8,
	CFA_SWITCH = 9,
};

enum unwind_reg {
	REG_SAME = 0,
	REG_AT_CFA = 1,
	REG_AT_SP = 2,
	REG_AT_FP = 3,
	REG_UNKNOWN = 4,
};

/* package unwind's Kind */
enum unwind_kind {
	KIND_CFI = 1,
	KIND_FP = 2,
	KIND_NONE = 3,
	KIND_FULL = 4, /* the table did not fit in the maps */
};

struct unwind_file_key {
	__u64 ino;
	__u32 dev; /* kernel dev_t of the inode's file system */
	__u32 pad;
};

struct unwind_file {
	__u64 size;  /* the file's size: an inode number reused by another file is not taken for it */
	__u32 start; /* its first row in unwind_rows */
	__u32 count; /* its rows */
	__u8 kind;   /* enum unwind_kind */
	__u8 pad[7];
};

struct unwind_row {
	__u32 off;  /* file offset where the rule starts */
	__u32 rule; /* index in unwind_rules */
};

struct unwind_rule {
	__u8 cfa;       /* enum unwind_cfa */
	__u8 threshold; /* CFA_PLT */
	__u8 signal;    /* a signal frame: the caller's PC is not a return address */
	__u8 fp;        /* enum unwind_reg */
	__u8 ra;        /* enum unwind_reg */
	__u8 pad[3];
	__s32 cfa_off;
	__s32 fp_off;
	__s32 ra_off;
};

/* A walked stack: ustacks' value, and the frames while walking. */
struct ustack {
	__u32 nr;   /* frames */
	__u32 stop; /* enum unwind_stop */
	__u64 ips[UNWIND_MAX_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader */
	__type(key, struct unwind_file_key);
	__type(value, struct unwind_file);
} unwind_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized by the loader */
	__type(key, __u32);
	__type(value, struct unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized by the loader */
	__type(key, __u32);
	__type(value, struct unwind_rule);
} unwind_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for the stacks seen only */
	__uint(max_entries, 1);               /* resized by the loader */
	__type(key, __u32);
	__type(value, struct ustack);
} ustacks SEC(".maps");

/* The frames while walking, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ustack);
} unwind_frames SEC(".maps");

volatile const __u8 unwind_page_shift = 12;

/* The walk's state, on the caller's stack (bpf_loop's context). */
struct unwind_state {
	__u64 pc, sp, fp;
	__u64 vm_start, vm_end, vm_off; /* the last frame's mapping: range, file offset of vm_start */
	__u32 start, count;             /* its file's rows */
	__u32 nr;                       /* frames so far */
	__u8 kind;                      /* its file's kind, 0: no mapping yet */
	__u8 fp_known;                  /* fp holds the frame's rbp */
	__u8 ret;                       /* pc is a return address (look it up one byte back) */
	__u8 stop;                      /* enum unwind_stop: STOP_DEPTH while going on */
	__u8 pad[4];
	struct unwind_file_key miss;    /* STOP_NOT_LOADED: the file */
	__u64 miss_start, miss_size;
};

/* One mapping, as bpf_find_vma's callback saw it. */
struct vma_seen {
	__u64 start, end, off, flags;
	__u64 ino, size;
	__u32 dev;
	__u8 file;
	__u8 pad[3];
};

static long vma_seen_of(void *task, struct vm_area_struct___unw *vma, void *data)
{
	struct vma_seen *v = data;
	v->start = vma->vm_start;
	v->end = vma->vm_end;
	v->off = (__u64)vma->vm_pgoff << unwind_page_shift;
	v->flags = vma->vm_flags;
	struct file___unw *f = vma->vm_file;
	if (f) {
		struct inode___unw *ino = f->f_inode;
		if (ino) {
			v->file = 1;
			v->ino = ino->i_ino;
			v->size = ino->i_size;
			struct super_block___unw *sb = ino->i_sb;
			if (sb)
				v->dev = sb->s_dev;
		}
	}
	return 0;
}

/* unwind_place finds the mapping of the frame (look: its PC, or its
 * return address minus one) and its file's rows, unless the last
 * frame's mapping holds it; false (with st->stop set) when the walk
 * ends here. *emit says whether the frame is shown even so. */
static __always_inline bool unwind_place(struct unwind_state *st, __u64 look, bool *emit)
{
	*emit = true;
	if (st->kind && look >= st->vm_start && look < st->vm_end)
		return true;
	struct vma_seen v = {};
	long err = bpf_find_vma(bpf_get_current_task_btf(), look, vma_seen_of, &v, 0);
	if (err == -ENOENT || (!err && !(v.flags & VM_EXEC))) {
		*emit = false; /* data read as a return address */
		st->stop = STOP_BAD_ADDRESS;
		return false;
	}
	if (err) {
		/* -EBUSY: the mappings are being changed; user space walks it */
		st->stop = STOP_NOT_LOADED;
		return false;
	}
	if (!v.file) {
		st->stop = STOP_ANON;
		return false;
	}
	struct unwind_file_key k = { .ino = v.ino, .dev = v.dev };
	struct unwind_file *f = bpf_map_lookup_elem(&unwind_files, &k);
	if (!f || f->size != v.size) {
		st->stop = STOP_NOT_LOADED;
		st->miss = k;
		st->miss_start = v.start;
		st->miss_size = v.size;
		return false;
	}
	st->vm_start = v.start;
	st->vm_end = v.end;
	st->vm_off = v.off;
	st->start = f->start;
	st->count = f->count;
	st->kind = f->kind;
	return true;
}

/* unwind_search returns the rule of file offset off among the rows
 * [start, start+count), NULL when there is none. */
static __always_inline struct unwind_rule *unwind_search(__u32 start, __u32 count, __u64 off)
{
	__u32 lo = start, hi = start + count;
	for (int i = 0; i < UNWIND_SEARCH_STEPS && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;
		struct unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!r)
			return NULL;
		if (r->off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == start || lo > start + count)
		return NULL;
	__u32 at = lo - 1;
	struct unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &at);
	if (!r)
		return NULL;
	__u32 ri = r->rule;
	return bpf_map_lookup_elem(&unwind_rules, &ri);
}

/* The frame-pointer rule (KIND_FP modules). */
static const struct unwind_rule fp_rule = {
	.cfa = CFA_FP, .cfa_off = 16, .fp = REG_AT_CFA, .fp_off = -16, .ra = REG_AT_CFA, .ra_off = -8,
};

static __always_inline bool read_user_u64(__u64 *v, __u64 addr)
{
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr) == 0;
}

static __always_inline __u64 reg_base(struct unwind_state *st, __u8 kind, __u64 cfa)
{
	if (kind == REG_AT_CFA)
		return cfa;
	if (kind == REG_AT_SP)
		return st->sp;
	return st->fp;
}

/* unwind_step applies rule r to the frame in st: the caller's pc, sp
 * and fp, or st->stop set. */
static __always_inline void unwind_step(struct unwind_state *st, const struct unwind_rule *r)
{
	switch (r->cfa) {
	case CFA_STOP:
		st->stop = STOP_COMPLETE;
		return;
	case CFA_NONE:
		st->stop = STOP_NO_CFI;
		return;
	case CFA_SWITCH:
		st->stop = STOP_SWITCH;
		return;
	case CFA_SP:
	case CFA_FP:
	case CFA_DEREF_SP:
	case CFA_DEREF_FP:
	case CFA_PLT:
		break;
	default:
		st->stop = STOP_UNSUPPORTED;
		return;
	}
	bool by_fp = r->cfa == CFA_FP || r->cfa == CFA_DEREF_FP || r->fp == REG_AT_FP || r->ra == REG_AT_FP;
	if (by_fp && !st->fp_known) {
		st->stop = STOP_FP_UNKNOWN;
		return;
	}
	__u64 cfa;
	if (r->cfa == CFA_SP || r->cfa == CFA_PLT || r->cfa == CFA_DEREF_SP)
		cfa = st->sp + (__s64)r->cfa_off;
	else
		cfa = st->fp + (__s64)r->cfa_off;
	if (r->cfa == CFA_PLT && (st->pc & 15) >= r->threshold)
		cfa += 8;
	if (r->cfa == CFA_DEREF_SP || r->cfa == CFA_DEREF_FP) {
		if (!read_user_u64(&cfa, cfa)) {
			st->stop = STOP_READ;
			return;
		}
	}
	if (!r->signal && cfa <= st->sp) {
		st->stop = STOP_BACKWARDS;
		return;
	}
	if (r->ra == REG_SAME || r->ra == REG_UNKNOWN) {
		st->stop = STOP_UNSUPPORTED; /* x86-64: the return address is always on the stack */
		return;
	}
	__u64 ra = 0, fp = st->fp;
	if (r->fp == REG_AT_CFA && r->ra == REG_AT_CFA && r->fp_off == -16 && r->ra_off == -8) {
		/* saved rbp and return address side by side: one read */
		__u64 pair[2];
		if (bpf_probe_read_user(pair, sizeof(pair), (const void *)(cfa - 16))) {
			st->stop = STOP_READ;
			return;
		}
		fp = pair[0];
		ra = pair[1];
	} else {
		if (!read_user_u64(&ra, reg_base(st, r->ra, cfa) + (__s64)r->ra_off)) {
			st->stop = STOP_READ;
			return;
		}
		if (r->fp == REG_AT_CFA || r->fp == REG_AT_SP || r->fp == REG_AT_FP) {
			if (!read_user_u64(&fp, reg_base(st, r->fp, cfa) + (__s64)r->fp_off)) {
				st->stop = STOP_READ;
				return;
			}
		}
	}
	if (r->fp == REG_UNKNOWN)
		st->fp_known = 0;
	else if (r->fp != REG_SAME)
		st->fp_known = 1;
	st->fp = fp;
	st->sp = cfa;
	st->pc = ra;
	st->ret = !r->signal;
	if (!ra)
		st->stop = STOP_COMPLETE; /* the outermost frame's return address is 0 */
}

/* unwind_frame is one bpf_loop iteration: frame st->nr. */
static long unwind_frame(__u32 i, void *data)
{
	struct unwind_state *st = data;
	__u32 zero = 0;
	struct ustack *u = bpf_map_lookup_elem(&unwind_frames, &zero);
	if (!u) {
		st->stop = STOP_MAP_FULL;
		return 1;
	}
	__u64 look = st->ret ? st->pc - 1 : st->pc;
	bool emit;
	bool ok = unwind_place(st, look, &emit);
	__u32 n = st->nr;
	if (emit && n < UNWIND_MAX_FRAMES) {
		u->ips[n] = st->pc;
		st->nr = n + 1;
	}
	if (!ok)
		return 1;
	if (st->kind == KIND_NONE || st->kind == KIND_FULL) {
		st->stop = st->kind == KIND_FULL ? STOP_MAP_FULL : STOP_NO_TABLE;
		return 1;
	}
	const struct unwind_rule *r;
	if (st->kind == KIND_FP) {
		if (!st->fp_known) {
			st->stop = STOP_FP_UNKNOWN;
			return 1;
		}
		if (!st->fp) {
			st->stop = STOP_COMPLETE; /* the outermost frame's rbp is 0 */
			return 1;
		}
		r = &fp_rule;
	} else {
		r = unwind_search(st->start, st->count, look - st->vm_start + st->vm_off);
		if (!r) {
			st->stop = STOP_NO_CFI;
			return 1;
		}
	}
	unwind_step(st, r);
	return st->stop != STOP_DEPTH; /* 1: the walk ended */
}

/* ustack_hash is a hash of a walked stack, as a non-negative s32 key. */
static __always_inline __u32 ustack_hash(struct ustack *u)
{
	__u64 h = 0x9e3779b97f4a7c15ULL ^ u->nr ^ ((__u64)u->stop << 32);
	for (int i = 0; i < UNWIND_MAX_FRAMES; i++) {
		if (i >= u->nr)
			break;
		h ^= u->ips[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 33;
	}
	return (__u32)(h ^ (h >> 31)) & 0x7fffffff;
}

static __always_inline bool ustack_same(struct ustack *a, struct ustack *b)
{
	if (a->nr != b->nr || a->stop != b->stop)
		return false;
	for (int i = 0; i < UNWIND_MAX_FRAMES; i++) {
		if (i >= a->nr)
			break;
		if (a->ips[i] != b->ips[i])
			return false;
	}
	return true;
}

/* user_regs reads the current thread's user registers; false on a
 * kernel thread or an architecture the walker does not know. */
static __always_inline bool user_regs(struct unwind_state *st)
{
	struct task_struct___unw *task = (void *)bpf_get_current_task_btf();
	if (task->flags & PF_KTHREAD_)
		return false;
	struct pt_regs___unw_x86 *regs = (void *)bpf_task_pt_regs((void *)task);
	if (!bpf_core_field_exists(regs->bp))
		return false;
	st->pc = BPF_CORE_READ(regs, ip);
	st->sp = BPF_CORE_READ(regs, sp);
	st->fp = BPF_CORE_READ(regs, bp);
	return true;
}

/* unwind_walk walks the current thread's user stack into the per-CPU
 * frames (returned, with nr and stop set), from the registers it
 * entered the kernel with; st keeps the first frame's registers (regs0)
 * and the file a STOP_NOT_LOADED missed. NULL: no user stack (a kernel
 * thread) or no scratch. */
static __always_inline struct ustack *unwind_walk(struct unwind_state *st, struct unwind_state *regs0)
{
	if (!user_regs(st))
		return NULL;
	st->fp_known = 1;
	st->stop = STOP_DEPTH;
	*regs0 = *st;
	bpf_loop(UNWIND_MAX_FRAMES, unwind_frame, st, 0);
	__u32 zero = 0;
	struct ustack *u = bpf_map_lookup_elem(&unwind_frames, &zero);
	if (!u)
		return NULL;
	u->nr = st->nr;
	u->stop = st->stop;
	return u;
}

/* ustack_intern returns the key of walked stack u in ustacks (>= 0),
 * adding it when new; -EEXIST when the key holds another stack or the
 * map is full. */
static __always_inline __s32 ustack_intern(struct ustack *u)
{
	__u32 key = ustack_hash(u);
	struct ustack *have = bpf_map_lookup_elem(&ustacks, &key);
	if (!have) {
		long err = bpf_map_update_elem(&ustacks, &key, u, BPF_NOEXIST);
		if (!err)
			return key;
		if (err == -EEXIST)
			have = bpf_map_lookup_elem(&ustacks, &key);
	}
	if (have && ustack_same(have, u))
		return key;
	return -EEXIST;
}

/* unwind_user_quiet is the walked stack's key for a caller that sends
 * nothing ahead of its event: a stack that needs a table not loaded yet
 * ends there (STOP_NOT_LOADED); -EEXIST (lost) when its key holds
 * another stack; -EFAULT without a user stack. */
static __always_inline __s32 unwind_user_quiet(void)
{
	struct unwind_state st = {}, regs0;
	struct ustack *u = unwind_walk(&st, &regs0);
	if (!u)
		return -EFAULT;
	return ustack_intern(u);
}

#endif /* IOTRACE_UNWIND_H */
