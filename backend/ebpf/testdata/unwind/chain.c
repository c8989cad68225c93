/* chain.c: main -> wombat_outer -> wombat_middle -> wombat_leaf_write ->
 * write(2) through libc (Debian's: built without frame pointers), three
 * times, to FILE. The unwinder tests build it with and without frame
 * pointers and check every function of the chain, in order, against gdb.
 * Usage: chain FILE */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) void wombat_leaf_write(int fd, const char *buf, size_t n)
{
	if (write(fd, buf, n) < 0)
		perror("write");
}

__attribute__((noinline)) void wombat_middle(int fd, const char *s)
{
	char buf[256];
	snprintf(buf, sizeof buf, "line %s\n", s);
	wombat_leaf_write(fd, buf, strlen(buf));
}

__attribute__((noinline)) void wombat_outer(int fd, int i)
{
	char s[16];
	snprintf(s, sizeof s, "%d", i);
	wombat_middle(fd, s);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 1;
	volatile int n = 3; /* not unrolled: one call site */
	for (int i = 0; i < n; i++)
		wombat_outer(fd, i);
	close(fd);
	return 0;
}
