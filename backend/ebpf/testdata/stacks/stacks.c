/* stacks.c: main -> outer_fn -> inner_fn -> write_block, which writes 4 KiB
 * to FILE; the stack tests check that the write's user stack names those
 * four functions in that order. Built with -O0 -g -fno-omit-frame-pointer.
 * Usage: stacks FILE */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static char buf[4096];

/* write(2) made here, not in libc: libc is built without frame pointers,
 * and a leaf without one hides its caller from a frame-pointer walk. */
static inline __attribute__((always_inline)) long raw_write(int fd, const void *b, unsigned long n)
{
#if defined(__x86_64__)
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(1), "D"(fd), "S"(b), "d"(n) : "rcx", "r11", "memory");
	return r;
#elif defined(__aarch64__)
	register long x0 __asm__("x0") = fd;
	register long x1 __asm__("x1") = (long)b;
	register long x2 __asm__("x2") = n;
	register long x8 __asm__("x8") = 64;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x1), "r"(x2), "r"(x8) : "memory");
	return x0;
#else
	return write(fd, b, n);
#endif
}

__attribute__((noinline)) int write_block(int fd)
{
	memset(buf, 'x', sizeof(buf));
	return raw_write(fd, buf, sizeof(buf)) == sizeof(buf) ? 0 : 1;
}

__attribute__((noinline)) int inner_fn(int fd) { return write_block(fd) + 0 * fd; }

__attribute__((noinline)) int outer_fn(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	int r = inner_fn(fd);
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	return outer_fn(argv[1]);
}
