/* willneed.c: start read-ahead of a whole file of at most a few MiB (posix_fadvise WILLNEED
 * queues the I/O and returns), then read its last 4 KiB at once: that read
 * queues no I/O of its own and waits for the read-ahead in flight.
 * Usage: willneed FILE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	int err = posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
	if (err) {
		fprintf(stderr, "posix_fadvise: %d\n", err);
		return 1;
	}
	char buf[4096];
	if (pread(fd, buf, sizeof(buf), st.st_size - sizeof(buf)) != sizeof(buf)) {
		perror("pread");
		return 1;
	}
	return 0;
}
