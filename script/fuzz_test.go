package script

import (
	"io"
	"testing"

	"go.starlark.net/starlark"
)

// FuzzFormat: any printf format parses or fails; a parsed one formats
// any of a few argument kinds without panicking.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{"%-16s %6d %8.3f ms\n", "%%", "%05x|%q|%r|%v", "%", "%-+ #0123.45g", "%z"} {
		f.Add(s)
	}
	s := &Script{formats: make(map[string]*format)}
	vals := []starlark.Value{starlark.MakeInt(-7), starlark.String("x"), starlark.Float(1.5), starlark.None, starlark.True,
		starlark.MakeUint64(1 << 63), starlark.Tuple{starlark.MakeInt(1)}}
	f.Fuzz(func(t *testing.T, fs string) {
		p, err := parseFormat(fs)
		if err != nil {
			return
		}
		for _, v := range vals {
			args := starlark.Tuple{starlark.String(fs)}
			for range p.verbs {
				args = append(args, v)
			}
			_ = s.formatTo(io.Discard, "printf", args)
		}
	})
}
