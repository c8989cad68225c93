package modident

import (
	"math/rand/v2"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/internal/names"
	"github.com/iotrace/iotrace/backend/etw/internal/tally"
	"github.com/iotrace/iotrace/resolve"
)

// collecting returns Modules in a file's first pass, and their tally.
func collecting() (*Modules, *tally.Tally) {
	t := tally.New(nil)
	m := New(t, names.New(resolve.NewTables()))
	m.BeginCollect()
	return m, t
}

// TestCollectedIdentities: the first pass collects identity records in
// any order (streams before the merge by time); the second gives each
// image event the merge of the records at its base and time, in the order
// they came (the first PE and PDB identity kept), once; the rest are
// counted as without their image.
func TestCollectedIdentities(t *testing.T) {
	m, tl := collecting()
	add := func(ts int64, base uint64, tds uint32, age uint32) {
		id := Identity{base: base, tds: tds, size: uint64(tds) * 2}
		if age != 0 {
			id.hasPDB, id.age, id.pdbID = true, age, "pdb"
		}
		m.Collect(ts, &id)
	}
	add(300, 0xA000, 3, 0) // out of time order
	add(100, 0xB000, 1, 0)
	add(100, 0xA000, 0, 7) // same time, another base: sorted by base
	add(200, 0xA000, 2, 0)
	add(100, 0xB000, 9, 5) // B's again, apart from its first: merged, its PE identity not kept
	add(100, 0xA000, 4, 0)
	add(200, 0xA000, 0, 8)
	m.EndCollect(0)
	if len(m.ids.keys) != 4 {
		t.Fatalf("%d identities collected: %+v", len(m.ids.keys), m.ids)
	}
	for _, w := range []struct {
		ts       int64
		base     uint64
		tds, age uint32
		ok       bool
	}{
		{100, 0xA000, 4, 7, true},
		{100, 0xB000, 1, 5, true},
		{200, 0xA000, 2, 8, true},
		{200, 0xB000, 0, 0, false},
		{50, 0xA000, 0, 0, false},
		{400, 0xA000, 0, 0, false},
	} {
		id, ok := m.take(w.base, w.ts)
		if ok != w.ok || ok && (id.tds != w.tds || id.size != uint64(w.tds)*2 || id.age != w.age || id.base != w.base || id.ts != w.ts) {
			t.Errorf("identity at %d %#x: %+v %v, want PE %d PDB age %d", w.ts, w.base, id, ok, w.tds, w.age)
		}
		if _, again := m.take(w.base, w.ts); again {
			t.Errorf("identity at %d %#x taken twice", w.ts, w.base)
		}
	}
	m.endCollected()
	if got := tl.Get(StatIdentityNoImage); got != 1 {
		t.Errorf("identities without image: %d, want 1 (the one at 300)", got)
	}
}

// TestCollectedIdentitiesMany: thousands of images (several chunks), the
// two records of each apart and out of order.
func TestCollectedIdentitiesMany(t *testing.T) {
	m, tl := collecting()
	const n = 3000
	perm := rand.New(rand.NewPCG(5, 6)).Perm(2 * n)
	for _, j := range perm {
		i := j % n
		id := Identity{base: uint64(i%7) << 20}
		if j < n {
			id.tds, id.size = uint32(i+1), uint64(i)
		} else {
			id.hasPDB, id.age = true, uint32(i+1)
		}
		m.Collect(int64(i/7), &id)
	}
	m.EndCollect(0)
	if len(m.ids.chunks) < 3 || len(m.ids.keys) != n {
		t.Fatalf("%d chunks, %d identities", len(m.ids.chunks), len(m.ids.keys))
	}
	for i := n - 1; i >= 0; i-- {
		id, ok := m.take(uint64(i%7)<<20, int64(i/7))
		if !ok || id.tds != uint32(i+1) || id.size != uint64(i) || id.age != uint32(i+1) {
			t.Fatalf("identity %d: %+v %v", i, id, ok)
		}
	}
	m.endCollected()
	if got := tl.Get(StatIdentityNoImage); got != 0 {
		t.Errorf("identities without image: %d", got)
	}
}
