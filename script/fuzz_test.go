package script

import (
	"io"
	"strings"
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

// FuzzGuard: the memory guard's rewriting (guard.go) changes no result:
// a program that runs within a few thousand steps ends with the same
// globals, or fails in both forms.
func FuzzGuard(f *testing.F) {
	for _, s := range []string{
		"x = [1]\nx += [2]\ny = x\nx *= 2\nz = (x, y)\n",
		"d = {'a': 'b'}\nd['a'] += 'c'\nd |= {'b': 1}\ne = d | {'c': 2}\n",
		"s = 'a-b-c'\nt = s.replace('-', '+').split('+')\nu = ','.join(t).upper()\nf = s.format\nv = '%s %d' % ('x', 3)\n",
		"l = [[]] * 3\nl[0] += [1]\nm = str(l) + repr(l)\nn = sorted(list(range(5)) * 2)\n",
		"def g(a, b = 'x' * 3, *c, **d):\n    a += b\n    return a\nr = g('y')\nq = [i * 2 for i in range(4) if i % 2]\n",
		"x = 1\nx += 2\nx %= 2\nx |= 4\nk = {'a': [1]}\nk['a'] += [2]\nz = getattr('ab', 'upper')()\n",
	} {
		f.Add(s)
	}
	// run returns the globals' renderings, and whether the program ran;
	// a program that runs out of steps in either form is not compared
	// (the rewritten one takes more).
	run := func(src string, guard bool) (out string, ok, steps bool) {
		f, err := fileOptions.Parse("f.star", src, 0)
		if err != nil {
			return "", false, false
		}
		s := &Script{}
		pre := starlark.StringDict{}
		for k, v := range s.guardBuiltins() {
			pre[k] = v
		}
		if guard {
			guardFile(f)
		}
		prog, err := starlark.FileProgram(f, pre.Has)
		if err != nil {
			return "", false, false
		}
		th := &starlark.Thread{Print: func(*starlark.Thread, string) {}}
		th.SetMaxExecutionSteps(5000)
		g, err := prog.Init(th, pre)
		if err != nil {
			return "", false, strings.Contains(err.Error(), "too many steps")
		}
		for _, k := range g.Keys() {
			if v := g[k].String(); len(v) < 1<<16 {
				out += k + "=" + v + "\n"
			}
		}
		return out, true, false
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<12 {
			return
		}
		plain, ok1, steps1 := run(src, false)
		guarded, ok2, steps2 := run(src, true)
		if steps1 || steps2 {
			return
		}
		if ok1 && ok2 && plain != guarded {
			t.Errorf("%q:\nplain:\n%s\nguarded:\n%s", src, plain, guarded)
		}
		if ok1 != ok2 {
			t.Errorf("%q runs plain: %v, guarded: %v", src, ok1, ok2)
		}
	})
}

// FuzzCheckNames: the load-time checks of a parsed script (enum names
// compared in code, the use of percentiles) never panic, and every
// error they report points at a place in the script.
func FuzzCheckNames(f *testing.F) {
	for _, s := range []string{
		"def on_event(e):\n    x = e.op == 'raed'\n",
		"x = ('raed' == e.layer, e.op in ('read', 'raed'), e.op not in [x, 'fsync'], 'synk' in e.flags)\n",
		"h = hist_log2('k')\ny = h['a'].p99 + h.items(sort='p99.9', **o)[0][1].percentile(5)\n",
		"x = (((e.status))) != ((('not_found')))\nz = trace.source == b'ebfp'\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<12 {
			return
		}
		file, err := fileOptions.Parse("f.star", src, 0)
		if err != nil {
			return
		}
		usesPercentiles(file)
		if err := checkNames(file); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.star:") {
					t.Errorf("%q: error %q does not point at the script", src, line)
				}
			}
		}
	})
}
