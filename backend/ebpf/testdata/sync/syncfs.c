/* syncfs.c: writes 1 MiB to FILE through the page cache, then calls
 * syncfs(2) (MODE "syncfs") or sync(2) (MODE "sync") on its file system.
 * Usage: syncfs FILE MODE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	static char buf[1 << 20];
	memset(buf, 'x', sizeof(buf));
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != sizeof(buf))
		return 1;
	if (!strcmp(argv[2], "syncfs")) {
		if (syncfs(fd))
			return 1;
	} else {
		sync();
	}
	close(fd);
	return 0;
}
