package etw

import (
	"math/rand/v2"
	"testing"
)

// TestCollectedIdentities: the first pass collects identity records in
// any order (streams before the merge by time); the second gives each
// image event the merge of the records at its base and time, in the order
// they came (the first PE and PDB identity kept), once; the rest are
// counted as without their image.
func TestCollectedIdentities(t *testing.T) {
	p := NewPipeline(&discard{}, Options{})
	p.setMode(modeCollect)
	add := func(ts int64, base uint64, tds uint32, age uint32) {
		id := modIdentity{base: base, tds: tds, size: uint64(tds) * 2}
		if age != 0 {
			id.hasPDB, id.age, id.pdbID = true, age, "pdb"
		}
		p.collectIdentity(ts, &id)
	}
	add(300, 0xA000, 3, 0) // out of time order
	add(100, 0xB000, 1, 0)
	add(100, 0xA000, 0, 7) // same time, another base: sorted by base
	add(200, 0xA000, 2, 0)
	add(100, 0xB000, 9, 5) // B's again, apart from its first: merged, its PE identity not kept
	add(100, 0xA000, 4, 0)
	add(200, 0xA000, 0, 8)
	p.startReplay()
	if len(p.ids1.keys) != 4 {
		t.Fatalf("%d identities collected: %+v", len(p.ids1.keys), p.ids1)
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
		id, ok := p.takeIdentity(w.base, w.ts)
		if ok != w.ok || ok && (id.tds != w.tds || id.size != uint64(w.tds)*2 || id.age != w.age || id.base != w.base || id.ts != w.ts) {
			t.Errorf("identity at %d %#x: %+v %v, want PE %d PDB age %d", w.ts, w.base, id, ok, w.tds, w.age)
		}
		if _, again := p.takeIdentity(w.base, w.ts); again {
			t.Errorf("identity at %d %#x taken twice", w.ts, w.base)
		}
	}
	p.flushIdentities()
	if got := p.tally.Get(StatIdentityNoImage); got != 1 {
		t.Errorf("identities without image: %d, want 1 (the one at 300)", got)
	}
}

// TestCollectedIdentitiesMany: thousands of images (several chunks), the
// two records of each apart and out of order.
func TestCollectedIdentitiesMany(t *testing.T) {
	p := NewPipeline(&discard{}, Options{})
	p.setMode(modeCollect)
	const n = 3000
	perm := rand.New(rand.NewPCG(5, 6)).Perm(2 * n)
	for _, j := range perm {
		i := j % n
		id := modIdentity{base: uint64(i%7) << 20}
		if j < n {
			id.tds, id.size = uint32(i+1), uint64(i)
		} else {
			id.hasPDB, id.age = true, uint32(i+1)
		}
		p.collectIdentity(int64(i/7), &id)
	}
	p.startReplay()
	if len(p.ids1.chunks) < 3 || len(p.ids1.keys) != n {
		t.Fatalf("%d chunks, %d identities", len(p.ids1.chunks), len(p.ids1.keys))
	}
	for i := n - 1; i >= 0; i-- {
		id, ok := p.takeIdentity(uint64(i%7)<<20, int64(i/7))
		if !ok || id.tds != uint32(i+1) || id.size != uint64(i) || id.age != uint32(i+1) {
			t.Fatalf("identity %d: %+v %v", i, id, ok)
		}
	}
	p.flushIdentities()
	if got := p.tally.Get(StatIdentityNoImage); got != 0 {
		t.Errorf("identities without image: %d", got)
	}
}
