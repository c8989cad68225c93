package metrics

import (
	"sort"
	"sync/atomic"
)

// Other is the label value of the series that sums the values a TopN did
// not admit.
const Other = "(other)"

// TopN bounds the values one label takes: at most Max values have series
// of their own, the rest are folded into one series labelled [Other].
//
// A value is admitted at once while a slot is free. Once every slot is
// taken, the values left out are counted in a Space-Saving summary of
// 2×Max candidates (Metwally et al., 2005: bounded memory, the heaviest
// values found with a known error), and at the end of each window a
// candidate takes the slot of the least active admitted value when it
// was surely more than twice as active in that window (its count less
// its error); an idle admitted value gives way to any active candidate.
// The evicted value's series are deleted (Evict is called first) and its
// later events are folded until it is admitted again. So the number of
// series is bounded by Max whatever runs, and the busiest values of the
// recent past have their own.
//
// Activity is the number of observations (Slot calls). Time is whatever
// clock the caller passes (event time in ns, or wall time), only
// compared with itself. A value equal to Other is always folded (its
// series would be Other's). A TopN is not safe for concurrent use,
// except Counts, which may be called from any goroutine.
type TopN struct {
	max    int
	window int64
	next   int64 // end of the current window; 0 before the first call

	index  map[string]int32 // admitted value → slot (1..max)
	values []string         // slot → value; [0] is Other
	used   []bool           // slot → taken
	hits   []uint64         // slot → observations this window
	free   []int32
	cands  spaceSaving

	// Evict, when set, is called with a slot and its value just before
	// the value is evicted and the slot given to another value.
	Evict func(slot int32, value string)

	pub struct{ admitted, evictions, folded atomic.Uint64 }
}

// TopNCounts are what a TopN did so far.
type TopNCounts struct {
	// Admitted is the number of values with a slot now.
	Admitted uint64
	// Evictions counts values that lost their slot to a busier one.
	Evictions uint64
	// Folded counts observations folded into Other.
	Folded uint64
}

// Counts returns the TopN's counts; safe from any goroutine.
func (t *TopN) Counts() TopNCounts {
	return TopNCounts{Admitted: t.pub.admitted.Load(), Evictions: t.pub.evictions.Load(), Folded: t.pub.folded.Load()}
}

// NewTopN returns a TopN of n values (at least 1), re-ranked every
// window (in the caller's clock units, at least 1).
func NewTopN(n int, window int64) *TopN {
	n = max(n, 1)
	t := &TopN{
		max:    n,
		window: max(window, 1),
		index:  make(map[string]int32, n),
		values: make([]string, n+1),
		used:   make([]bool, n+1),
		hits:   make([]uint64, n+1),
		cands:  newSpaceSaving(2 * n),
	}
	t.values[0] = Other
	for s := int32(n); s >= 1; s-- {
		t.free = append(t.free, s)
	}
	return t
}

// Slot returns the slot of value (1..Max), or 0 when it is folded into
// Other. now is the caller's clock.
func (t *TopN) Slot(value string, now int64) int32 {
	if now >= t.next {
		t.roll(now)
	}
	if s, ok := t.index[value]; ok {
		t.hits[s]++
		return s
	}
	if value == Other {
		t.pub.folded.Add(1)
		return 0
	}
	if n := len(t.free); n > 0 {
		s := t.free[n-1]
		t.free = t.free[:n-1]
		t.admit(s, value)
		t.pub.admitted.Add(1)
		t.hits[s]++
		return s
	}
	t.cands.add(value)
	t.pub.folded.Add(1)
	return 0
}

// Value returns the value admitted in slot s ([Other] for 0).
func (t *TopN) Value(s int32) string { return t.values[s] }

// Len returns the number of admitted values.
func (t *TopN) Len() int { return len(t.index) }

// Max returns the number of values that can be admitted.
func (t *TopN) Max() int { return t.max }

func (t *TopN) admit(s int32, value string) {
	t.index[value] = s
	t.values[s] = value
	t.used[s] = true
}

// roll ends the window: candidates surely busier than admitted values
// take their slots, then the window's counts start again.
func (t *TopN) roll(now int64) {
	if t.next != 0 && t.cands.len() > 0 {
		t.rebalance()
	}
	for i := range t.hits {
		t.hits[i] = 0
	}
	t.cands.reset()
	t.next = now + t.window
}

func (t *TopN) rebalance() {
	cands := t.cands.ranked()
	slots := make([]int32, 0, t.max)
	for s := 1; s <= t.max; s++ {
		if t.used[s] {
			slots = append(slots, int32(s))
		}
	}
	sort.Slice(slots, func(i, j int) bool {
		if t.hits[slots[i]] != t.hits[slots[j]] {
			return t.hits[slots[i]] < t.hits[slots[j]]
		}
		return slots[i] < slots[j]
	})
	for i, c := range cands {
		if i >= len(slots) {
			break
		}
		s := slots[i]
		if c.lower() == 0 || c.lower() <= 2*t.hits[s] {
			break // candidates and slots are in order: no later pair qualifies
		}
		old := t.values[s]
		if t.Evict != nil {
			t.Evict(s, old)
		}
		delete(t.index, old)
		t.pub.evictions.Add(1)
		t.admit(s, c.value)
	}
}

// spaceSaving is the Space-Saving summary of the most frequent values
// among those not admitted: at most cap counters; a new value takes the
// smallest counter's place, inheriting its count as its error.
type spaceSaving struct {
	cap   int
	index map[string]int
	items []candidate
}

type candidate struct {
	value string
	count uint64
	err   uint64 // count overestimates the value's true count by at most err
}

// lower is what the value surely counted.
func (c candidate) lower() uint64 { return c.count - c.err }

func newSpaceSaving(cap int) spaceSaving {
	return spaceSaving{cap: cap, index: make(map[string]int, cap)}
}

func (s *spaceSaving) len() int { return len(s.items) }

func (s *spaceSaving) add(value string) {
	if i, ok := s.index[value]; ok {
		s.items[i].count++
		return
	}
	if len(s.items) < s.cap {
		s.index[value] = len(s.items)
		s.items = append(s.items, candidate{value: value, count: 1})
		return
	}
	m := 0
	for i := 1; i < len(s.items); i++ {
		if s.items[i].count < s.items[m].count {
			m = i
		}
	}
	delete(s.index, s.items[m].value)
	least := s.items[m].count
	s.items[m] = candidate{value: value, count: least + 1, err: least}
	s.index[value] = m
}

// ranked returns the candidates by surely counted observations, most
// first (ties by value, for determinism).
func (s *spaceSaving) ranked() []candidate {
	out := append([]candidate(nil), s.items...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].lower() != out[j].lower() {
			return out[i].lower() > out[j].lower()
		}
		return out[i].value < out[j].value
	})
	return out
}

func (s *spaceSaving) reset() {
	clear(s.index)
	s.items = s.items[:0]
}
