package resolve

import (
	"math"
	"sort"
)

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
	m map[K][]Span
}

// NewHistory returns an empty history.
func NewHistory[K comparable]() *History[K] {
	return &History[K]{m: make(map[K][]Span)}
}

// Len returns the number of keys with at least one binding.
func (h *History[K]) Len() int { return len(h.m) }

// Bind binds k to name from time t on, ending any open binding of k at t.
func (h *History[K]) Bind(k K, t int64, name string) {
	spans := h.m[k]
	if n := len(spans); n > 0 && spans[n-1].To == Forever {
		if spans[n-1].Name == name {
			return
		}
		spans[n-1].To = t
	}
	h.m[k] = append(spans, Span{From: t, To: Forever, Name: name})
}

// BindRundown records that k was named name at time t according to a
// snapshot of state (a /proc walk, an ETW rundown). When k has no binding
// at all, the name applies to the whole trace; when k's last binding has
// ended, it applies from that end on; when k is bound at t already, the
// existing binding wins.
func (h *History[K]) BindRundown(k K, t int64, name string) {
	spans := h.m[k]
	n := len(spans)
	switch {
	case n == 0:
		h.m[k] = []Span{{From: Always, To: Forever, Name: name}}
	case spans[n-1].To == Forever:
		// Still bound: the event stream knows better than the snapshot,
		// except that a binding with no name is filled in.
		if spans[n-1].Name == "" {
			spans[n-1].Name = name
		}
	default:
		h.m[k] = append(spans, Span{From: spans[n-1].To, To: Forever, Name: name})
	}
}

// Unbind ends k's open binding at t. The binding still covers t itself, so
// the event that ended it (a close, a cleanup, a delete) resolves to the
// name it had.
func (h *History[K]) Unbind(k K, t int64) {
	spans := h.m[k]
	if n := len(spans); n > 0 && spans[n-1].To == Forever {
		spans[n-1].To = t
	}
}

// Lookup returns the name k had at time t: the latest binding whose
// interval contains t.
func (h *History[K]) Lookup(k K, t int64) (string, bool) {
	spans := h.m[k]
	if len(spans) == 0 {
		return "", false
	}
	// Spans are ordered by From (rundowns only ever go first or last).
	i := sort.Search(len(spans), func(i int) bool { return spans[i].From > t })
	for j := i - 1; j >= 0; j-- {
		if spans[j].To >= t {
			return spans[j].Name, true
		}
		// Earlier spans end before this one starts, except a span that
		// ends exactly where a later one begins; stop once past that.
		if j < i-1 {
			break
		}
	}
	return "", false
}

// Current returns k's open binding, if any.
func (h *History[K]) Current(k K) (string, bool) {
	spans := h.m[k]
	if n := len(spans); n > 0 && spans[n-1].To == Forever {
		return spans[n-1].Name, true
	}
	return "", false
}

// Spans returns k's bindings in time order. The slice must not be changed.
func (h *History[K]) Spans(k K) []Span { return h.m[k] }

// Range calls fn for every key and its bindings, in no particular order,
// until fn returns false.
func (h *History[K]) Range(fn func(k K, spans []Span) bool) {
	for k, s := range h.m {
		if !fn(k, s) {
			return
		}
	}
}
