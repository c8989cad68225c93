/* rename.c: opens FILE, renames the thread (PR_SET_NAME) to NAME, opens
 * FILE again, then execs /bin/cat FILE. Usage: rename FILE NAME */
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	close(open(argv[1], O_RDONLY));
	if (prctl(PR_SET_NAME, argv[2], 0, 0, 0))
		return 1;
	close(open(argv[1], O_RDONLY));
	execl("/bin/cat", "cat", argv[1], (char *)0);
	return 1;
}
