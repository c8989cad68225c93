package bpfload

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// TestAssign: a skipped program's field stays nil, one that is neither
// loaded nor skipped is an error naming it, and objs must point to a
// struct (embedded structs walked).
func TestAssign(t *testing.T) {
	type progs struct {
		A *ebpf.Program `ebpf:"a"`
	}
	var objs struct {
		progs
		B *ebpf.Program `ebpf:"b"`
	}
	c := &ebpf.Collection{Programs: map[string]*ebpf.Program{}, Maps: map[string]*ebpf.Map{}}
	if err := assign(&objs, c, map[string]bool{"a": true, "b": true}, true); err != nil {
		t.Fatal(err)
	}
	if objs.A != nil || objs.B != nil {
		t.Error("a skipped program was set")
	}
	err := assign(&objs, c, map[string]bool{"a": true}, true)
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("missing program: %v", err)
	}
	if err := assign(objs, c, nil, true); err == nil {
		t.Error("assign to a struct value accepted")
	}
}
