/* smash.c: smash_write points its saved frame pointer (its caller's rbp,
 * saved at [rbp]) at ASCII text, then writes to FILE: a walk that
 * follows the saved frame pointer (main's frame is found through rbp:
 * built -O0 -fno-omit-frame-pointer) reads the text as a return address,
 * as walks through code without frame pointers do with whatever rbp
 * holds there. Usage: smash FILE */
#include <fcntl.h>
#include <unistd.h>

static char text[64] = "c/log.txine 1\nline 2\nline 3\nline 4\n";

__attribute__((noinline)) void smash_write(int fd)
{
	void **fp = __builtin_frame_address(0);
	void *saved = fp[0];
	fp[0] = text;
	write(fd, "x", 1);
	fp[0] = saved;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 1;
	smash_write(fd);
	close(fd);
	return 0;
}
