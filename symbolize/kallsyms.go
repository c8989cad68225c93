package symbolize

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Kernel names kernel addresses from a symbol table in /proc/kallsyms'
// format ("ffffffff81000000 T _stext", a module name in brackets after
// the name).
type Kernel struct {
	syms []ksym
}

type ksym struct {
	addr   uint64
	name   string
	module string
}

// ErrHiddenKernelAddresses is returned by ParseKallsyms when every address
// is zero: the kernel hides them from this reader (kptr_restrict).
var ErrHiddenKernelAddresses = errors.New("kallsyms: every address is 0: kernel addresses are hidden (kptr_restrict; read it as root with kernel.kptr_restrict < 2)")

// ParseKallsyms reads a kallsyms table, keeping text symbols (t, T, w, W).
func ParseKallsyms(r io.Reader) (*Kernel, error) {
	k := &Kernel{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line, nonzero := 0, false
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("kallsyms line %d: %q: want ADDRESS TYPE NAME", line, sc.Text())
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d: address %q: %w", line, f[0], err)
		}
		if addr != 0 {
			nonzero = true
		}
		switch f[1] {
		case "t", "T", "w", "W":
		default:
			continue
		}
		s := ksym{addr: addr, name: f[2]}
		if len(f) > 3 {
			s.module = strings.Trim(f[3], "[]")
		}
		k.syms = append(k.syms, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("kallsyms line %d: %w", line+1, err)
	}
	if line > 0 && !nonzero {
		return nil, ErrHiddenKernelAddresses
	}
	slices.SortStableFunc(k.syms, func(a, b ksym) int { return cmp.Compare(a.addr, b.addr) })
	return k, nil
}

// Len returns the number of text symbols.
func (k *Kernel) Len() int { return len(k.syms) }

// Symbolize names a kernel address: the text symbol at or below it (the
// table has no sizes), "module" set for a module's symbol.
func (k *Kernel) Symbolize(addr uint64) Frame {
	f := Frame{Addr: addr, Module: "kernel"}
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].addr > addr }) - 1
	if i < 0 || k.syms[i].addr == 0 {
		f.Reason = NoSymbol
		return f
	}
	s := k.syms[i]
	f.Offset = addr - s.addr
	f.Function = s.name
	if s.module != "" {
		f.Module = s.module
	}
	return f
}
