// exc.cpp: C++ with exceptions: thrower throws, catcher catches it and,
// in its handler, writes to FILE through an std::ofstream (libstdc++);
// the unwinder test checks the write's stack holds catcher and main
// below libstdc++'s frames. Usage: exc FILE
#include <fstream>
#include <stdexcept>
#include <string>

__attribute__((noinline)) void thrower(int i)
{
	throw std::runtime_error("wombat " + std::to_string(i));
}

__attribute__((noinline)) void catcher(const char *path)
{
	try {
		thrower(42);
	} catch (const std::exception &e) {
		std::ofstream f(path);
		f << e.what() << '\n';
		f.flush();
	}
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	catcher(argv[1]);
	return 0;
}
