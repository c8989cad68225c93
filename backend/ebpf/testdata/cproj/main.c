#include <stdio.h>
#include "util.h"

int main(void)
{
	printf("%d\n", add(2, 3));
	return 0;
}
