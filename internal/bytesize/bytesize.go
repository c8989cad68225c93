// Package bytesize parses the sizes iotrace's flags take ("8M", "512K",
// "1G", "64MiB" or a byte count), for the commands and the benchmark
// tools alike.
package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse returns the bytes s names: a positive count, optionally with K, M
// or G (powers of 1024; "KB", "KiB" alike), at most 1 TiB.
func Parse(s string) (int, error) {
	mult := 1
	t := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B")
	t = strings.TrimSuffix(t, "I")
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1<<30, t[:len(t)-1]
	}
	v, err := strconv.Atoi(t)
	if err != nil || v <= 0 || v > (1<<40)/mult {
		return 0, fmt.Errorf("bad size %q (want bytes, or a number with K, M or G)", s)
	}
	return v * mult, nil
}
