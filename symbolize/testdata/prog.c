/* A program whose call chain the symbolizer tests name: main -> outer_fn
 * -> inner_fn -> write_block. Built by the tests with -g and frame
 * pointers. */
#include <fcntl.h>
#include <unistd.h>

#ifndef VARIANT
#define VARIANT 1
#endif

__attribute__((noinline)) int write_block(int fd)
{
	static char block[4096] = {VARIANT};
	return (int)write(fd, block, sizeof block);
}

__attribute__((noinline)) int inner_fn(int fd)
{
	int n = write_block(fd);
	return n + VARIANT;
}

__attribute__((noinline)) int outer_fn(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int n = inner_fn(fd);
	close(fd);
	return n;
}

int main(int argc, char **argv)
{
	return outer_fn(argc > 1 ? argv[1] : "/dev/null") > 0 ? 0 : 1;
}
