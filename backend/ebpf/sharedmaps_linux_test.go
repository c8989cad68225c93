package ebpf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// TestSharedMapLayouts: the maps the block object takes from this one
// (bpf/cur_syscall.h, included by both) have the same key and value
// layouts in both committed objects: one regenerated without the other
// would read a thread's state at the wrong offsets, and the loader checks
// only the sizes.
func TestSharedMapLayouts(t *testing.T) {
	own, err := loadIotrace()
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ebpf.LoadCollectionSpec("blockio/blockio_bpfel.o")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cur_syscall", "thread_slots", "inode_io"} {
		a, b := own.Maps[name], blk.Maps[name]
		if a == nil || b == nil {
			t.Errorf("%s: in the system-call object %v, in the block object %v", name, a != nil, b != nil)
			continue
		}
		if a.Type != b.Type || a.MaxEntries != b.MaxEntries || a.Flags != b.Flags {
			t.Errorf("%s: %v/%d/%#x here, %v/%d/%#x in the block object", name, a.Type, a.MaxEntries, a.Flags, b.Type, b.MaxEntries, b.Flags)
		}
		for _, x := range []struct {
			what string
			a, b btf.Type
		}{{"key", a.Key, b.Key}, {"value", a.Value, b.Value}} {
			if la, lb := layout(x.a), layout(x.b); la != lb {
				t.Errorf("%s %s layouts differ (regenerate both objects: go generate ./backend/ebpf ./backend/ebpf/blockio):\n here:  %s\n block: %s", name, x.what, la, lb)
			}
		}
	}
}

// layout describes t's memory layout: sizes, member names and offsets.
func layout(t btf.Type) string {
	var b strings.Builder
	var walk func(t btf.Type)
	walk = func(t btf.Type) {
		t = btf.UnderlyingType(t)
		switch v := t.(type) {
		case *btf.Struct:
			fmt.Fprintf(&b, "struct %s(%d){", v.Name, v.Size)
			for _, m := range v.Members {
				fmt.Fprintf(&b, "%s@%d:", m.Name, m.Offset)
				walk(m.Type)
				b.WriteString(";")
			}
			b.WriteString("}")
		case *btf.Array:
			fmt.Fprintf(&b, "[%d]", v.Nelems)
			walk(v.Type)
		case nil:
			b.WriteString("nil")
		default:
			size, err := btf.Sizeof(v)
			fmt.Fprintf(&b, "%T(%d,%v)", v, size, err)
		}
	}
	walk(t)
	return b.String()
}
