/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * ustack_send.h: the syscall object's user stacks (unwind.h), sent ahead
 * of their event when they cannot go by key: inline (a stack_rec) when
 * their key in ustacks holds another stack or the map is full, or as a
 * copy of the registers and the stack (a ustack_copy_rec) for user space
 * to walk when a mapped file's table is not loaded yet (as perf
 * --call-graph dwarf does with every sample).
 *
 * Include after unwind.h, records.h and the definitions of rb, count(),
 * wakeup_flags() and stack_scratch.
 */
#ifndef IOTRACE_USTACK_SEND_H
#define IOTRACE_USTACK_SEND_H

/* The ustack field of a record when the walk was left to user space: a
 * ustack_copy_rec with the event's ID went ahead of it. */
#define USTACK_COPIED (-EINPROGRESS)

struct ustack_copy_scratch {
	struct ustack_copy_rec copy;
	__u8 slack[4096]; /* a page read past copy.data's end: the verifier cannot see it never is */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ustack_copy_scratch);
} ustack_copy_scratch SEC(".maps");

/* ustack_send sends walked stack u inline for event id (its key held
 * another stack, or ustacks is full) and returns -EEXIST, as
 * bpf_get_stackid's callers do; -ENOSPC when the ring buffer is full. */
static __always_inline __s32 ustack_send(struct ustack *u, __u64 id, __u32 cpu)
{
	__u32 zero = 0;
	struct stack_rec *sr = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!sr)
		return -ENOMEM;
	__u32 n = u->nr;
	if (n > UNWIND_MAX_FRAMES)
		n = UNWIND_MAX_FRAMES;
	for (int i = 0; i < UNWIND_MAX_FRAMES; i++) {
		if (i >= n)
			break;
		sr->ips[i] = u->ips[i];
	}
	sr->h.type = REC_STACK;
	sr->h.pad = 0;
	sr->h.kind = 0;
	sr->h.cpu = cpu;
	sr->h.time = 0;
	sr->id = id;
	sr->nr = n;
	sr->stop = u->stop;
	__u64 size = offsetof(struct stack_rec, ips) + (__u64)n * 8;
	if (size > sizeof(*sr))
		size = sizeof(*sr);
	if (bpf_ringbuf_output(&rb, sr, size, wakeup_flags()) < 0) {
		count(C_LOST_STACK);
		return -ENOSPC;
	}
	return -EEXIST;
}

/* ustack_copy sends, for event id, the registers the walk started from
 * (regs0), the file it missed (st) and the stack from regs0's sp: up to
 * UNWIND_COPY_MAX bytes, no further than the stack's mapping, a page at
 * a time (a page of the mapping never touched is not there, and a read
 * across it would fail whole). It returns USTACK_COPIED, or -ENOSPC when
 * the ring buffer is full. */
static __always_inline __s32 ustack_copy(struct unwind_state *regs0, struct unwind_state *st, __u64 id, __u32 cpu)
{
	__u32 zero = 0;
	struct ustack_copy_scratch *s = bpf_map_lookup_elem(&ustack_copy_scratch, &zero);
	if (!s)
		return -ENOMEM;
	struct ustack_copy_rec *c = &s->copy;
	c->h.type = REC_USTACK_COPY;
	c->h.pad = 0;
	c->h.kind = 0;
	c->h.cpu = cpu;
	c->h.time = 0;
	c->id = id;
	c->pc = regs0->pc;
	c->sp = regs0->sp;
	c->fp = regs0->fp;
	c->miss_ino = st->miss.ino;
	c->miss_dev = st->miss.dev;
	c->miss_start = st->miss_start;
	c->miss_size = st->miss_size;
	struct vma_seen v = {};
	__u64 want = 0;
	if (!bpf_find_vma(bpf_get_current_task_btf(), regs0->sp, vma_seen_of, &v, 0) && v.end > regs0->sp)
		want = v.end - regs0->sp;
	if (want > UNWIND_COPY_MAX)
		want = UNWIND_COPY_MAX;
	__u64 len = 0;
	for (int i = 0; i < UNWIND_COPY_MAX / 4096 + 1; i++) {
		if (len >= want)
			break;
		__u64 at = regs0->sp + len;
		__u64 n = 4096 - (at & 4095);
		if (n > want - len)
			n = want - len;
		if (len >= UNWIND_COPY_MAX || n > 4096)
			break;
		__u32 off = len & (UNWIND_COPY_MAX - 1); /* len + n <= want <= UNWIND_COPY_MAX */
		if (bpf_probe_read_user(&c->data[off], n, (const void *)at))
			break;
		len += n;
	}
	c->len = len;
	__u64 size = offsetof(struct ustack_copy_rec, data) + len;
	if (size > sizeof(*c))
		size = sizeof(*c);
	if (bpf_ringbuf_output(&rb, c, size, wakeup_flags()) < 0) {
		count(C_LOST_USTACK_COPY);
		return -ENOSPC;
	}
	return USTACK_COPIED;
}

/* unwind_user walks the current thread's user stack for event id and
 * returns its key in ustacks (>= 0), or: -EEXIST (sent inline, a
 * stack_rec ahead), USTACK_COPIED (sent as a copy to walk in user
 * space), -EFAULT (no user stack: a kernel thread), or -ENOSPC/-ENOMEM
 * (lost: the ring buffer full, no scratch). With id 0 (an asynchronous
 * request's submission, whose event comes later) nothing is sent ahead:
 * as unwind_user_quiet. */
static __always_inline __s32 unwind_user(__u64 id, __u32 cpu)
{
	if (!id)
		return unwind_user_quiet();
	struct unwind_state st = {}, regs0;
	struct ustack *u = unwind_walk(&st, &regs0);
	if (!u)
		return -EFAULT;
	if (st.stop == STOP_NOT_LOADED)
		return ustack_copy(&regs0, &st, id, cpu);
	__s32 key = ustack_intern(u);
	if (key != -EEXIST)
		return key;
	return ustack_send(u, id, cpu);
}

#endif /* IOTRACE_USTACK_SEND_H */
