/* dl.c: dlopens LIB (built from dllib.c: not named by the program, so its
 * unwind table is not loaded before it runs) and calls its
 * dllib_write(FILE) twice, once at once and once 0.5 s later: the first
 * stack is walked from a copy in user space, the second in the kernel,
 * and both must be the same stack. Usage: dl LIB FILE */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) static void call(void (*f)(const char *), const char *path)
{
	f(path);
	__asm__ volatile("" ::: "memory"); /* not a tail call: call keeps its frame */
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void (*f)(const char *) = (void (*)(const char *))dlsym(h, "dllib_write");
	if (!f)
		return 1;
	volatile int n = 2; /* twice, from one call site */
	for (int i = 0; i < n; i++) {
		call(f, argv[2]);
		usleep(500000);
	}
	return 0;
}
