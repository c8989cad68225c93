/* calls: N system calls in a loop, timed from inside (clock_gettime
 * around the loop), printed as ns per call. "traced": pread64 of 4 KiB
 * from a cached file (a call every tracer here traces); "untraced":
 * getppid (a call none of them records). Used by bench/ptrace/run.sh. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: calls traced|untraced N FILE\n");
		return 2;
	}
	long n = atol(argv[2]);
	int traced = strcmp(argv[1], "traced") == 0;
	int fd = open(argv[3], O_RDONLY);
	if (fd < 0) {
		perror(argv[3]);
		return 1;
	}
	static char buf[4096];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		if (traced) {
			if (pread(fd, buf, sizeof buf, 0) != sizeof buf)
				return 1;
		} else {
			syscall(SYS_getppid);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	printf("%.1f\n", ns / n);
	return 0;
}
