/* syncfs.c: writes 1 MiB to FILE through the page cache, then calls
 * syncfs(2) (MODE "syncfs") or sync(2) (MODE "sync") on its file system.
 * Usage: syncfs FILE MODE
 *
 * Other writeback (another process's sync, the flusher's background
 * writeback when the machine has many dirty pages) can write the pages
 * before the call does. cachestat(2) tells how many are dirty and not
 * under writeback just before the call: the file is written again (up to
 * 20 times) until all are, and that count goes to FILE.dirty as "DIRTY
 * PAGES PAGESIZE" for the test to check the call's writeback against. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* the same on every architecture */
#endif

struct range { uint64_t off, len; };
struct stat_ { uint64_t cache, dirty, writeback, evicted, recently_evicted; };

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	static char buf[1 << 20];
	memset(buf, 'x', sizeof(buf));
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t pages = sizeof(buf) / page;
	struct range r = { 0, sizeof(buf) };
	struct stat_ cs = { 0 };
	for (int i = 0; i < 20; i++) {
		if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf))
			return 1;
		if (syscall(__NR_cachestat, fd, &r, &cs, 0))
			return 1;
		if (cs.dirty == pages && cs.writeback == 0)
			break;
	}
	uint64_t dirty = cs.writeback ? 0 : cs.dirty;
	if (!strcmp(argv[2], "syncfs")) {
		if (syncfs(fd))
			return 1;
	} else {
		sync();
	}
	close(fd);
	char name[4096];
	snprintf(name, sizeof(name), "%s.dirty", argv[1]);
	FILE *f = fopen(name, "w");
	if (!f || fprintf(f, "%llu %llu %ld\n", (unsigned long long)dirty, (unsigned long long)pages, page) < 0 || fclose(f))
		return 1;
	return 0;
}
