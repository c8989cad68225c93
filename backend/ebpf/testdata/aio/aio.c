/* aio.c: Linux AIO through the raw system calls (no libaio needed), for
 * the AIO tests of package ebpf. Usage: aio FILE MODE
 *   partial   io_submit of two reads, the second on a bad descriptor: the
 *             kernel takes the first only (returns 1); reap it.
 *   unreaped  submit one O_DIRECT read and exit without reaping it.
 *   batch     submit 8 O_DIRECT 4 KiB reads in one io_submit; reap all. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long sys_io_setup(unsigned n, aio_context_t *ctx) { return syscall(SYS_io_setup, n, ctx); }
static long sys_io_submit(aio_context_t ctx, long n, struct iocb **cbs) { return syscall(SYS_io_submit, ctx, n, cbs); }
static long sys_io_getevents(aio_context_t ctx, long min, long n, struct io_event *ev)
{
	return syscall(SYS_io_getevents, ctx, min, n, ev, NULL);
}

static void prep(struct iocb *cb, int fd, void *buf, size_t n, long long off, unsigned long long data)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = fd;
	cb->aio_lio_opcode = IOCB_CMD_PREAD;
	cb->aio_buf = (unsigned long)buf;
	cb->aio_nbytes = n;
	cb->aio_offset = off;
	cb->aio_data = data;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: aio FILE partial|unreaped|batch\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY | O_DIRECT);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	aio_context_t ctx = 0;
	if (sys_io_setup(64, &ctx) < 0) {
		perror("io_setup");
		return 1;
	}
	void *buf;
	if (posix_memalign(&buf, 4096, 8 * 4096))
		return 1;
	struct iocb cbs[8], *ptrs[8];
	struct io_event ev[8];
	if (!strcmp(argv[2], "partial")) {
		prep(&cbs[0], fd, buf, 4096, 0, 1);
		prep(&cbs[1], 999, (char *)buf + 4096, 4096, 4096, 2);
		ptrs[0] = &cbs[0];
		ptrs[1] = &cbs[1];
		long n = sys_io_submit(ctx, 2, ptrs);
		if (n != 1) {
			fprintf(stderr, "io_submit took %ld, want 1\n", n);
			return 1;
		}
		if (sys_io_getevents(ctx, 1, 1, ev) != 1)
			return 1;
		return 0;
	}
	if (!strcmp(argv[2], "unreaped")) {
		prep(&cbs[0], fd, buf, 4096, 0, 1);
		ptrs[0] = &cbs[0];
		if (sys_io_submit(ctx, 1, ptrs) != 1) {
			perror("io_submit");
			return 1;
		}
		return 0; /* the kernel waits for it at exit; nobody reaps it */
	}
	if (!strcmp(argv[2], "batch")) {
		for (int i = 0; i < 8; i++) {
			prep(&cbs[i], fd, (char *)buf + i * 4096, 4096, (long long)i * 4096, i);
			ptrs[i] = &cbs[i];
		}
		if (sys_io_submit(ctx, 8, ptrs) != 8) {
			perror("io_submit");
			return 1;
		}
		int got = 0;
		while (got < 8) {
			long n = sys_io_getevents(ctx, 1, 8 - got, ev);
			if (n <= 0)
				return 1;
			got += n;
		}
		return 0;
	}
	return 2;
}
