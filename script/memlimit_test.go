package script

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// feed loads src with a memory limit and feeds it up to n events (each a
// read), stopping at the first error. It returns the events the script
// took and the error.
func feed(t *testing.T, src string, limit uint64, n int) (int, error) {
	t.Helper()
	var out bytes.Buffer
	s, err := Load("mem.star", []byte(src), Options{Stdout: &out, Stderr: &out, MaxMemory: limit, KeepGoing: true})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if err := s.Begin(&event.Header{OS: "linux"}); err != nil {
		t.Fatal(err)
	}
	e := event.New()
	e.Layer, e.Op, e.Pid, e.Comm = event.LayerFile, event.OpRead, 1, "x"
	for i := 0; i < n; i++ {
		e.ID, e.Time = uint64(i+1), int64(i)
		if err := s.Event(&e); err != nil {
			return i, err
		}
	}
	return n, s.Close()
}

// The three hostile scripts of issue #17: each stops with the memory
// error, long before it would have grown the heap by what it tries
// (limits low enough that without the limit none of them can exhaust the
// machine, high enough to be over the runtime's own noise).
func TestMemoryLimitStopsHostileScripts(t *testing.T) {
	const limit = 48 << 20
	cases := []struct {
		name, src string
		events    int // what the script may get; without the limit it grows past 4x the limit by then
	}{
		{"list append", "data = []\ndef on_event(e):\n    data.append(\"x\" * 20000 + str(e.id))\n", 20000}, // 400 MB
		{"string doubling", "s = [\"x\"]\ndef on_event(e):\n    s[0] = s[0] + s[0]\n", 28},                  // 256 MB
		{"dict of strings", "d = {}\ndef on_event(e):\n    d[e.id] = \"%d\" % e.id * 5000\n", 40000},        // 400+ MB
	}
	for _, c := range cases {
		took, err := feed(t, c.src, limit, c.events)
		if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") || !strings.Contains(err.Error(), "--max-memory") {
			t.Errorf("%s: took %d events, err %v; want the memory limit's error", c.name, took, err)
			continue
		}
		var me *MemoryLimitError
		if !errors.As(err, &me) || me.Limit != limit || me.Grown < limit {
			t.Errorf("%s: %v is not a *MemoryLimitError past %d bytes", c.name, err, limit)
		}
		if took >= c.events {
			t.Errorf("%s: stopped only after every event", c.name)
		}
	}
	// Many aggregations made at load time.
	_, err := Load("aggs.star", []byte("aggs = [count() for i in range(3000000)]\n"), Options{Stdout: &bytes.Buffer{}, MaxMemory: limit})
	if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
		t.Errorf("many aggregations: %v", err)
	}
	// range() cannot build a huge list in one step.
	_, err = Load("range.star", []byte("x = list(range(1 << 30))\n"), Options{Stdout: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("huge range: %v", err)
	}
	// A script within its limit runs to the end.
	if took, err := feed(t, "data = []\ndef on_event(e):\n    data.append(e.id)\n", limit, 10000); err != nil || took != 10000 {
		t.Errorf("small script: took %d, %v", took, err)
	}
}
