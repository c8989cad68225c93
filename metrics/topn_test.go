package metrics

import (
	"fmt"
	"testing"
)

// TestTopNAdmitsThenFolds: values are admitted while slots are free; the
// rest fold into Other, counted; a value named like Other always folds.
func TestTopNAdmitsThenFolds(t *testing.T) {
	top := NewTopN(2, 100)
	if s := top.Slot("a", 0); s == 0 {
		t.Fatal("a not admitted")
	}
	if s := top.Slot("b", 1); s == 0 {
		t.Fatal("b not admitted")
	}
	if s := top.Slot("a", 2); s != top.Slot("a", 3) || top.Value(s) != "a" {
		t.Errorf("a moved slots or lost its value")
	}
	if s := top.Slot("c", 4); s != 0 {
		t.Errorf("c got slot %d with every slot taken", s)
	}
	if s := top.Slot(Other, 5); s != 0 {
		t.Errorf("%q got slot %d", Other, s)
	}
	c := top.Counts()
	if c.Admitted != 2 || c.Folded != 2 || c.Evictions != 0 {
		t.Errorf("counts %+v, want 2 admitted, 2 folded, 0 evictions", c)
	}
}

// TestTopNReranks: at the end of a window a candidate surely more than
// twice as busy as the least busy admitted value takes its slot (Evict is
// told first); one that is not stays folded.
func TestTopNReranks(t *testing.T) {
	top := NewTopN(2, 100)
	var evicted []string
	top.Evict = func(slot int32, v string) { evicted = append(evicted, fmt.Sprintf("%d:%s", slot, v)) }
	top.Slot("a", 0)
	top.Slot("b", 0)
	for i := 0; i < 10; i++ {
		top.Slot("a", 10)
		top.Slot("b", 10)
		top.Slot("c", 10) // 10, as busy as a and b: not enough
	}
	top.Slot("a", 100) // the window ends
	if len(evicted) != 0 {
		t.Fatalf("evicted %v for a candidate no busier", evicted)
	}
	for i := 0; i < 30; i++ {
		top.Slot("c", 150)
	}
	for i := 0; i < 5; i++ {
		top.Slot("b", 150)
	}
	// a: 1 observation this window, b: 5, c: 30 folded.
	s := top.Slot("x", 200) // the window ends: c takes a's slot
	if len(evicted) != 1 || evicted[0] != "1:a" {
		t.Fatalf("evicted %v, want [1:a]", evicted)
	}
	if s != 0 {
		t.Errorf("x admitted (slot %d) with every slot taken", s)
	}
	if got := top.Slot("c", 201); got != 1 || top.Value(1) != "c" {
		t.Errorf("c in slot %d, slot 1 holds %q", got, top.Value(1))
	}
	if got := top.Slot("a", 202); got != 0 {
		t.Errorf("evicted a still has slot %d", got)
	}
	if c := top.Counts(); c.Evictions != 1 || c.Admitted != 2 {
		t.Errorf("counts %+v", c)
	}
}

// TestTopNIdleGivesWay: an admitted value idle for a window gives its
// slot to any candidate active in it.
func TestTopNIdleGivesWay(t *testing.T) {
	top := NewTopN(1, 10)
	top.Slot("old", 0)
	top.Slot("new", 11) // a new window: old idle in it, new folded once
	top.Slot("new", 25) // the window ends
	if top.Value(1) != "new" {
		t.Errorf("slot 1 holds %q, want new", top.Value(1))
	}
}

// TestTopNBounded: a million distinct values keep the TopN's memory at
// its bound.
func TestTopNBounded(t *testing.T) {
	top := NewTopN(10, 1000)
	for i := 0; i < 1_000_000; i++ {
		top.Slot(fmt.Sprintf("p%d", i%50_000), int64(i))
	}
	if len(top.index) > 10 || len(top.cands.items) > 20 || len(top.cands.index) > 20 {
		t.Errorf("index %d, candidates %d/%d: beyond the bound", len(top.index), len(top.cands.items), len(top.cands.index))
	}
}
