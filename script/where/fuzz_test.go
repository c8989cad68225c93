package where

import (
	"testing"
)

// FuzzCompile: any expression either compiles or fails with an error;
// a compiled filter evaluates any event without panicking.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"op == 'read' and latency > ms(10)",
		"pid in (1, 2, 3) or comm == 'dd'",
		"'sync' in flags and not failed",
		"glob(path, '*.log') and path.startswith('/var')",
		"offset // kib(4) % 2 == -1",
		"layer == 'block' and (size > 0 or dev != '')",
		"x = (",
		"file_object == 0xffffffffffffffff",
	} {
		f.Add(s)
	}
	e := sample()
	var zero = sample()
	zero.Reset()
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := Compile(expr, Source{File: "fuzz"})
		if err != nil {
			if _, ok := err.(*Error); !ok && err.Error() == "" {
				t.Fatalf("empty error for %q", expr)
			}
			return
		}
		flt.Match(&e)
		flt.Match(&zero)
		_ = flt.Pushdown().String()
	})
}
