package blockio

import "testing"

// TestFillAnswers: an answer is given for its bio's file and time window
// only, taken once by the bio whose queue it was for, and the memo is
// bounded.
func TestFillAnswers(t *testing.T) {
	var m fillAnswers
	m.put(1, fillAnswer{ino: 7, inoDev: 3, queueTS: 100, w: witnessRec{ts: 150}})
	for _, c := range []struct {
		name          string
		bio, ino      uint64
		dev           uint32
		after, before uint64
		want          bool
	}{
		{"its fill", 1, 7, 3, 100, 200, true},
		{"another bio", 2, 7, 3, 100, 200, false},
		{"another file", 1, 8, 3, 100, 200, false},
		{"another file system", 1, 7, 4, 100, 200, false},
		{"completed before this fill was queued: an earlier bio at the address", 1, 7, 3, 160, 200, false},
		{"an answer for a bio queued after this fill", 1, 7, 3, 90, 200, false},
		{"completed after the read ended", 1, 7, 3, 100, 150, false},
	} {
		ts, ok := m.of(&FillQuery{Bio: c.bio, Ino: c.ino, InoDev: c.dev, After: c.after, Before: c.before})
		if ok != c.want || (ok && ts != 150) {
			t.Errorf("%s: of = %d, %v; want %v", c.name, ts, ok, c.want)
		}
	}
	if _, ok := m.take(1, 101); ok {
		t.Error("taken by a bio queued after the fill the answer was for")
	}
	if _, ok := m.take(1, 150); ok {
		t.Error("taken by a bio queued after the completion")
	}
	if w, ok := m.take(1, 99); !ok || w.ts != 150 {
		t.Errorf("take = %+v, %v", w, ok)
	}
	if _, ok := m.take(1, 99); ok {
		t.Error("taken twice")
	}
	for i := range uint64(maxFillAnswers + 1) {
		m.put(i, fillAnswer{queueTS: i})
	}
	if len(m) > maxFillAnswers {
		t.Errorf("%d answers kept, at most %d", len(m), maxFillAnswers)
	}
}
