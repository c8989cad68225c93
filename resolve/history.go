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

// History maps keys to names over time. Bindings are expected in time
// order (as events arrive); a rundown binding may apply retroactively.
// The zero value is not usable; create one with NewHistory.
type History[K comparable] struct {
	m map[K]*spanList
	// ver counts changes: a lookup cached at one version holds until the
	// next change.
	ver uint64
	// Keys and their first spans are carved from slabs: a trace binds
	// hundreds of thousands of keys, most of them a few times.
	lists []spanList
	spans []Span
}

// spanList is one key's bindings, ordered by From.
type spanList struct {
	s []Span
	// unsorted is set when a binding started before the one bound before
	// it (facts out of time order): lookups are then not cached.
	unsorted bool
}

const (
	listSlab = 1024 // spanLists per slab
	spanSlab = 4096 // Spans per slab
	firstCap = 4    // capacity of a new key's span slice
)

// NewHistory returns an empty history.
func NewHistory[K comparable]() *History[K] {
	return &History[K]{m: make(map[K]*spanList)}
}

// list returns k's bindings, creating an empty list.
func (h *History[K]) list(k K) *spanList {
	if l := h.m[k]; l != nil {
		return l
	}
	if len(h.lists) == 0 {
		h.lists = make([]spanList, listSlab)
	}
	l := &h.lists[0]
	h.lists = h.lists[1:]
	if len(h.spans) < firstCap {
		h.spans = make([]Span, spanSlab)
	}
	l.s = h.spans[:0:firstCap]
	h.spans = h.spans[firstCap:]
	h.m[k] = l
	return l
}

// ref returns k's bindings, nil when k was never bound. The list stays
// valid, and current, as k is bound and unbound again.
func (h *History[K]) ref(k K) *spanList { return h.m[k] }

// Len returns the number of keys with at least one binding.
func (h *History[K]) Len() int { return len(h.m) }

// Bind binds k to name from time t on, ending any open binding of k at t.
func (h *History[K]) Bind(k K, t int64, name string) { h.bind(h.list(k), t, name) }

func (h *History[K]) bind(l *spanList, t int64, name string) {
	h.ver++
	spans := l.s
	if n := len(spans); n > 0 && spans[n-1].To == Forever {
		if spans[n-1].Name == name {
			return
		}
		spans[n-1].To = t
	}
	if n := len(spans); n > 0 && t < spans[n-1].From {
		l.unsorted = true
	}
	l.s = append(spans, Span{From: t, To: Forever, Name: name})
}

// BindRundown records that k was named name at time t according to a
// snapshot of state (a /proc walk, an ETW rundown). When k has no binding
// at all, the name applies to the whole trace; when k's last binding has
// ended, it applies from that end on; when k is bound at t already, the
// existing binding wins.
func (h *History[K]) BindRundown(k K, t int64, name string) { h.bindRundown(h.list(k), t, name) }

func (h *History[K]) bindRundown(l *spanList, t int64, name string) {
	h.ver++
	spans := l.s
	n := len(spans)
	switch {
	case n == 0:
		l.s = append(spans, Span{From: Always, To: Forever, Name: name})
	case spans[n-1].To == Forever:
		// Still bound: the event stream knows better than the snapshot,
		// except that a binding with no name is filled in.
		if spans[n-1].Name == "" {
			spans[n-1].Name = name
		}
	default:
		if spans[n-1].To < spans[n-1].From {
			l.unsorted = true
		}
		l.s = append(spans, Span{From: spans[n-1].To, To: Forever, Name: name})
	}
}

// Unbind ends k's open binding at t. The binding still covers t itself, so
// the event that ended it (a close, a cleanup, a delete) resolves to the
// name it had.
func (h *History[K]) Unbind(k K, t int64) {
	if l := h.m[k]; l != nil {
		h.unbind(l, t)
	}
}

func (h *History[K]) unbind(l *spanList, t int64) {
	h.ver++
	if n := len(l.s); n > 0 && l.s[n-1].To == Forever {
		l.s[n-1].To = t
	}
}

// Lookup returns the name k had at time t: the latest binding whose
// interval contains t.
func (h *History[K]) Lookup(k K, t int64) (string, bool) {
	l := h.m[k]
	if l == nil {
		return "", false
	}
	return lookup(l.s, t)
}

func lookup(spans []Span, t int64) (string, bool) {
	if j, _ := lookupIndex(spans, t); j >= 0 {
		return spans[j].Name, true
	}
	return "", false
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
