// Package tally keeps the counters and warnings of the ETW pipeline
// (package etw) and of its stages (stackjoin, modident). It is the one
// concrete struct through which a stage reports back to the pipeline: a
// count on a hot path is a direct call, not one through an interface or a
// function value. Written by hand: it is a map of named counters with the
// rules of a file's two passes, nothing a library has.
package tally

import (
	"fmt"
	"slices"

	"github.com/iotrace/iotrace/event"
)

// MaxWarnings bounds the warnings a Tally passes on.
const MaxWarnings = 10

// Tally is the counters and warnings of one pipeline. It is not safe for
// concurrent use.
type Tally struct {
	counts map[string]*counter // by name: one map access per count
	muted  bool
	warn   func(string)
	warned int
}

// counter is one named counter.
type counter struct {
	n    uint64
	kind event.CounterKind
}

// New returns an empty Tally that passes its first MaxWarnings warnings
// to warn (which may be nil).
func New(warn func(string)) *Tally {
	return &Tally{counts: make(map[string]*counter), warn: warn}
}

// Mute stops (or resumes) counting and warning: a file's first pass
// counts nothing, since its second pass sees the same records again.
func (t *Tally) Mute(on bool) { t.muted = on }

// Muted reports whether the tally is muted.
func (t *Tally) Muted() bool { return t.muted }

// Add adds n to the counter name, of kind (the kind of its first count
// stays), unless muted.
func (t *Tally) Add(name string, kind event.CounterKind, n uint64) {
	if t.muted {
		return
	}
	c := t.counts[name]
	if c == nil {
		c = &counter{kind: kind}
		t.counts[name] = c
	}
	c.n += n
}

// Get returns the counter name so far.
func (t *Tally) Get(name string) uint64 {
	if c := t.counts[name]; c != nil {
		return c.n
	}
	return 0
}

// Warn passes on a one-line message, unless muted or MaxWarnings were
// passed on already.
func (t *Tally) Warn(format string, args ...any) {
	if t.warn == nil || t.warned >= MaxWarnings || t.muted {
		return
	}
	t.warned++
	t.warn(fmt.Sprintf(format, args...))
}

// AddTo adds the counters to s, by name.
func (t *Tally) AddTo(s *event.Stats) {
	names := make([]string, 0, len(t.counts))
	for name := range t.counts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c := t.counts[name]
		s.Add(c.kind, name, c.n)
	}
}
