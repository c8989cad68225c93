package resolve

import "math"

// Always is the start of a binding that holds from before the trace began
// (a rundown with no earlier binding for its key).
const Always = math.MinInt64

// Forever is the end of a binding that has not ended.
const Forever = math.MaxInt64

// Span is one binding of a key to a name over the closed time interval
// [From, To].
type Span struct {
	From, To int64
	Name     string
}

// Limits bound what a History keeps, so that a reader resolving a trace
// of any length in one streaming pass needs memory for the state of the
// traced system, not for the trace's whole past. A zero field means no
// limit. Lookups that would need a binding a limit dropped report
// Dropped instead of a name.
type Limits struct {
	// SpansPerKey is the number of bindings kept per key: a key bound
	// once more drops its oldest binding.
	SpansPerKey int
	// EndedKeys is the number of keys with no open binding kept: past
	// it, the key whose binding ended longest ago (in the order the
	// ends were applied) is forgotten.
	EndedKeys int
}

// StreamLimits returns the limits input uses to resolve traces in one
// streaming pass: 8 bindings per key and the 65,536 keys that ended last.
// Lookups at times close to the stream position, the common case by far,
// never need more (a late event needs its key's binding to have ended
// fewer than 65,536 unbinds ago), and the memory stays in the tens of
// megabytes whatever the trace's length.
func StreamLimits() Limits { return Limits{SpansPerKey: 8, EndedKeys: 1 << 16} }

// Result says what a lookup found.
type Result uint8

const (
	// Unbound: the key had no binding at the time.
	Unbound Result = iota
	// Bound: the key had a binding at the time (its name may be empty).
	Bound
	// Dropped: a binding the key may have had at the time was dropped
	// to respect the History's Limits; its name is unknown.
	Dropped
)

// History maps keys to names over time. Bindings are expected in time
// order (as events arrive); a rundown binding may apply retroactively.
// The zero value is not usable; create one with NewHistory.
type History[K comparable] struct {
	m map[K]*spanList
	// Keys and their first spans are carved from slabs: a trace binds
	// hundreds of thousands of keys, most of them a few times.
	lists []spanList
	spans []Span

	lim Limits
	// ended is a ring of the keys unbound last (EndedKeys entries at
	// most); endedN is how many it holds, endedAt where the oldest is.
	ended     []endedKey[K]
	endedAt   int
	endedN    int
	seq       uint64
	free      []*spanList // lists of forgotten keys, for reuse
	droppedTo int64       // the latest end of a forgotten key
	// pending holds the rundowns announced by expect, per key in
	// stream order; pos is the stream position (facts applied so far)
	// that decides which of them a lookup may use.
	pending        map[K][]expectation
	pendingEntries int
	pos            *int64
}

// expectation is an announced rundown: its name, and the stream position
// of the last other fact that may concern its key before it (-1 for
// none): a lookup made before that fact was applied must not use it.
type expectation struct {
	name  string
	after int64
}

// spanList is one key's bindings, ordered by From.
type spanList struct {
	s []Span
	// unsorted is set when a binding started before the one bound before
	// it (facts out of time order): lookups are then not cached.
	unsorted bool
	// ver counts changes to s, across reuse of the list for another
	// key: a lookup cached at one version holds until the next change.
	ver uint64
	// gen counts reuses of the list for another key.
	gen uint32
	// droppedTo is the latest time covered by a binding of this key
	// that a limit dropped (Always when none).
	droppedTo int64
	// endSeq is the sequence number of the key's latest unbind; ended
	// says that the last binding has ended; maxEnd is the latest end of
	// any binding (Always when none). Kept here so that the ring of ended
	// keys checks and forgets a key without touching its spans.
	endSeq uint64
	ended  bool
	maxEnd int64
}

// endedKey is an unbind in the ring of ended keys.
type endedKey[K comparable] struct {
	k   K
	l   *spanList
	seq uint64
}

const (
	listSlab = 1024 // spanLists per slab
	spanSlab = 4096 // Spans per slab
	firstCap = 4    // capacity of a new key's span slice
)

// NewHistory returns an empty history that keeps every binding.
func NewHistory[K comparable]() *History[K] {
	return &History[K]{m: make(map[K]*spanList), droppedTo: Always}
}

// NewBoundedHistory returns an empty history that keeps what lim allows.
func NewBoundedHistory[K comparable](lim Limits) *History[K] {
	h := NewHistory[K]()
	h.lim = lim
	return h
}

// list returns k's bindings, creating an empty list.
func (h *History[K]) list(k K) *spanList {
	if l := h.m[k]; l != nil {
		return l
	}
	return h.newList(k)
}

func (h *History[K]) newList(k K) *spanList {
	var l *spanList
	if n := len(h.free); n > 0 {
		l = h.free[n-1]
		h.free = h.free[:n-1]
	} else {
		if len(h.lists) == 0 {
			h.lists = make([]spanList, listSlab)
		}
		l = &h.lists[0]
		h.lists = h.lists[1:]
		if len(h.spans) < firstCap {
			h.spans = make([]Span, spanSlab)
		}
		l.s = h.spans[:0:firstCap]
		h.spans = h.spans[firstCap:]
	}
	// The key may have had bindings in a list that was forgotten: any
	// time up to the latest forgotten end is in doubt.
	l.droppedTo = h.droppedTo
	l.maxEnd = Always
	h.m[k] = l
	return l
}

// ref returns k's bindings, nil when k has none. The list stays valid,
// and current, as k is bound and unbound again, until its gen changes
// (a bounded History forgot k and reused the list).
func (h *History[K]) ref(k K) *spanList { return h.m[k] }

// Len returns the number of keys with at least one binding.
func (h *History[K]) Len() int { return len(h.m) }

// Bind binds k to name from time t on, ending any open binding of k at t.
func (h *History[K]) Bind(k K, t int64, name string) { h.bind(h.list(k), t, name) }

func (h *History[K]) bind(l *spanList, t int64, name string) {
	spans := l.s
	n := len(spans)
	if n > 0 && spans[n-1].To == Forever && spans[n-1].Name == name {
		return
	}
	if n > 0 && spans[n-1].From == t && (spans[n-1].To == Forever || spans[n-1].To == t) {
		// Bound at this very time already (and maybe unbound): no
		// lookup finds that binding (of two starting at t, the later
		// wins), so it is renamed and reopened rather than kept. A key
		// bound again and again at one time holds one binding, not one
		// per name.
		l.ver++
		spans[n-1].Name, spans[n-1].To = name, Forever
		l.ended = false
		return
	}
	if n > 0 && spans[n-1].To == Forever {
		spans[n-1].To = t
		l.maxEnd = max(l.maxEnd, t)
	}
	if n := len(spans); n > 0 && t < spans[n-1].From {
		l.unsorted = true
	}
	h.add(l, Span{From: t, To: Forever, Name: name})
}

// add appends s to l, dropping l's oldest binding when a limit says so.
func (h *History[K]) add(l *spanList, s Span) {
	l.ver++
	if limit := h.lim.SpansPerKey; limit > 0 && len(l.s) >= limit {
		l.droppedTo = max(l.droppedTo, l.s[0].To)
		n := copy(l.s, l.s[1:])
		l.s = l.s[:n]
	}
	l.s = append(l.s, s)
	l.ended = false
}

// BindRundown records that k was named name at time t according to a
// snapshot of state (a /proc walk, an ETW rundown). When k has no binding
// at all, the name applies to the whole trace; when k's last binding has
// ended, it applies from just after that end on; when k is bound at t
// already, the existing binding wins (its name is filled in when it has
// none). It consumes the first rundown announced for k (Tables.Prescan).
func (h *History[K]) BindRundown(k K, t int64, name string) {
	h.consume(k)
	h.bindRundown(h.list(k), t, name)
}

func (h *History[K]) bindRundown(l *spanList, t int64, name string) {
	spans := l.s
	n := len(spans)
	switch {
	case n == 0:
		h.add(l, Span{From: Always, To: Forever, Name: name})
	case spans[n-1].To == Forever:
		// Still bound: the event stream knows better than the snapshot,
		// except that a binding with no name is filled in.
		if spans[n-1].Name == "" {
			l.ver++
			spans[n-1].Name = name
		}
	default:
		// From just after the end: the event that ended the binding
		// keeps the name it had.
		from := spans[n-1].To + 1
		if from <= spans[n-1].From {
			l.unsorted = true
		}
		h.add(l, Span{From: from, To: Forever, Name: name})
	}
}

// expect announces that a rundown binding k to name comes later in the
// stream of bindings, after the fact at stream position after (-1: none)
// that was the last other fact for k before it. Until BindRundown applies
// it, lookups that find no binding for k answer as if it had been
// applied to k's bindings as they are, provided the stream has reached
// after (see expected): this is how a reader that applies bindings as it
// streams a trace resolves events recorded before a rundown written later
// (an ETW rundown at the end of the trace, a /proc walk that finished
// after the first events), without keeping the trace's whole history.
// Rundowns for one key are consumed in the order they were announced.
// Tables.Prescan is what calls it.
func (h *History[K]) expect(k K, name string, after int64) {
	if h.pending == nil {
		h.pending = make(map[K][]expectation)
	}
	h.pending[k] = append(h.pending[k], expectation{name: name, after: after})
	h.pendingEntries++
}

// Pending returns the number of announced rundowns not applied yet.
func (h *History[K]) Pending() int { return h.pendingEntries }

// consume removes the first rundown announced for k.
func (h *History[K]) consume(k K) {
	if h.pendingEntries == 0 {
		return
	}
	names, ok := h.pending[k]
	if !ok {
		return
	}
	h.pendingEntries--
	if len(names) <= 1 {
		delete(h.pending, k)
	} else {
		h.pending[k] = names[1:]
	}
}

// Unbind ends k's open binding at t. The binding still covers t itself, so
// the event that ended it (a close, a cleanup, a delete) resolves to the
// name it had.
func (h *History[K]) Unbind(k K, t int64) {
	if l := h.m[k]; l != nil {
		h.unbind(k, l, t)
	}
}

func (h *History[K]) unbind(k K, l *spanList, t int64) {
	n := len(l.s)
	if n == 0 || l.s[n-1].To != Forever {
		return
	}
	l.ver++
	if n > 1 && l.s[n-1].From > t {
		// The binding began after t (a rundown from just after an end
		// at t): ended at t, it would cover no time, and no lookup
		// would find it. It is dropped; the key stays ended as it was.
		l.s = l.s[:n-1]
		l.ended = true
		return
	}
	l.s[n-1].To = t
	l.ended, l.maxEnd = true, max(l.maxEnd, t)
	if h.lim.EndedKeys > 0 {
		h.ended1(k, l)
	}
}

// ended1 records that k's binding ended, forgetting the key whose binding
// ended longest ago when the ring is full and that key has not been bound
// again since.
func (h *History[K]) ended1(k K, l *spanList) {
	if h.ended == nil {
		h.ended = make([]endedKey[K], h.lim.EndedKeys)
	}
	h.seq++
	l.endSeq = h.seq
	if h.endedN == len(h.ended) {
		old := &h.ended[h.endedAt]
		if ol := old.l; ol.endSeq == old.seq && ol.ended {
			h.forget(old.k, ol)
		}
		*old = endedKey[K]{k: k, l: l, seq: h.seq}
		h.endedAt++
		if h.endedAt == len(h.ended) {
			h.endedAt = 0
		}
		return
	}
	i := h.endedAt + h.endedN
	if i >= len(h.ended) {
		i -= len(h.ended)
	}
	h.ended[i] = endedKey[K]{k: k, l: l, seq: h.seq}
	h.endedN++
}

// forget removes k and keeps its list for reuse.
func (h *History[K]) forget(k K, l *spanList) {
	delete(h.m, k)
	h.droppedTo = max(h.droppedTo, l.maxEnd)
	// The spans are overwritten when the list is reused: clearing them
	// would touch memory that is cold by now.
	l.s = l.s[:0]
	l.unsorted, l.ended, l.maxEnd = false, false, Always
	l.ver++
	l.gen++
	l.endSeq = 0
	h.free = append(h.free, l)
}

// Lookup returns the name k had at time t: the latest binding whose
// interval contains t.
func (h *History[K]) Lookup(k K, t int64) (string, bool) {
	name, res := h.Find(k, t)
	return name, res == Bound
}

// Find returns the name k had at time t and whether k was bound then, or
// Dropped when a limit dropped what would tell.
func (h *History[K]) Find(k K, t int64) (string, Result) {
	return h.find(k, h.m[k], t)
}

// find is Find with k's list (nil when none).
func (h *History[K]) find(k K, l *spanList, t int64) (string, Result) {
	if l != nil {
		if j, _ := lookupIndex(l.s, t); j >= 0 {
			if name := l.s[j].Name; name != "" || h.pendingEntries == 0 {
				return name, Bound
			}
			return h.expected(k, l, t)
		}
		if t <= l.droppedTo {
			return "", Dropped
		}
	} else if t <= h.droppedTo {
		return "", Dropped
	}
	if h.pendingEntries == 0 {
		return "", Unbound
	}
	return h.expected(k, l, t)
}

// expected answers a lookup at t that found no named binding: as if k's
// announced rundowns had been applied to l by BindRundown, in order, up
// to the first that comes after another fact for k not applied yet (the
// state it would apply to is not known yet). Whatever l holds, they give
// one binding at most, named by the first of them with a name: the whole
// trace when k has no binding, from just after the end of k's last
// binding when it ended, or the name of k's open binding when it has
// none.
func (h *History[K]) expected(k K, l *spanList, t int64) (string, Result) {
	name := ""
	pos := int64(math.MaxInt64)
	if h.pos != nil {
		pos = *h.pos
	}
	for _, x := range h.pending[k] {
		if x.after >= pos {
			break
		}
		if x.name != "" {
			name = x.name
			break
		}
	}
	if name != "" {
		if l == nil || len(l.s) == 0 {
			return name, Bound
		}
		switch last := l.s[len(l.s)-1]; {
		case last.To == Forever:
			if last.Name == "" && t >= last.From {
				return name, Bound
			}
		case t > last.To:
			return name, Bound
		}
	}
	if l != nil {
		if j, _ := lookupIndex(l.s, t); j >= 0 {
			return l.s[j].Name, Bound
		}
	}
	return "", Unbound
}

// lookupIndex returns the index of the binding Lookup finds at t, -1 for
// none; last reports that it is the last binding starting no later than t.
func lookupIndex(spans []Span, t int64) (j int, last bool) {
	// Spans are ordered by From (rundowns only ever go first or last):
	// i is the first span that starts after t (the search of sort.Search,
	// inlined).
	i, hi := 0, len(spans)
	for i < hi {
		mid := int(uint(i+hi) >> 1)
		if spans[mid].From <= t {
			i = mid + 1
		} else {
			hi = mid
		}
	}
	for j := i - 1; j >= 0; j-- {
		if spans[j].To >= t {
			return j, j == i-1
		}
		// Earlier spans end before this one starts, except a span that
		// ends exactly where a later one begins; stop once past that.
		if j < i-1 {
			break
		}
	}
	return -1, false
}

// validity returns the interval [lo, hi] of times at which lookupIndex
// finds binding j again, given that it was the last binding starting no
// later than some t in it; lo > hi when unknown (an unsorted list).
func (l *spanList) validity(j int) (lo, hi int64) {
	if l.unsorted {
		return 1, 0
	}
	lo, hi = l.s[j].From, l.s[j].To
	if j+1 < len(l.s) {
		next := l.s[j+1].From
		if next <= lo {
			return 1, 0
		}
		hi = min(hi, next-1)
	}
	return lo, hi
}

// Current returns k's open binding, if any.
func (h *History[K]) Current(k K) (string, bool) {
	l := h.m[k]
	if l == nil {
		return "", false
	}
	if n := len(l.s); n > 0 && l.s[n-1].To == Forever {
		return l.s[n-1].Name, true
	}
	return "", false
}

// Spans returns k's bindings in time order. The slice must not be changed.
func (h *History[K]) Spans(k K) []Span {
	if l := h.m[k]; l != nil {
		return l.s
	}
	return nil
}

// Range calls fn for every key and its bindings, in no particular order,
// until fn returns false.
func (h *History[K]) Range(fn func(k K, spans []Span) bool) {
	for k, l := range h.m {
		if len(l.s) == 0 {
			continue
		}
		if !fn(k, l.s) {
			return
		}
	}
}
