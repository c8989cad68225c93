package tally

import (
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestTally: a counter keeps the kind of its first count; nothing is
// counted or warned while muted; warnings stop at MaxWarnings; AddTo
// adds the counters by name.
func TestTally(t *testing.T) {
	var msgs []string
	tl := New(func(m string) { msgs = append(msgs, m) })
	tl.Add("b", event.CountDropped, 2)
	tl.Add("b", event.CountInfo, 3)
	tl.Mute(true)
	tl.Add("a", event.CountInfo, 1)
	tl.Warn("muted")
	tl.Mute(false)
	tl.Add("a", event.CountLost, 4)
	for i := 0; i < MaxWarnings+2; i++ {
		tl.Warn("w%d", i)
	}
	if tl.Get("a") != 4 || tl.Get("b") != 5 || tl.Get("c") != 0 {
		t.Errorf("a %d, b %d, c %d", tl.Get("a"), tl.Get("b"), tl.Get("c"))
	}
	if len(msgs) != MaxWarnings || msgs[0] != "w0" {
		t.Errorf("warnings %q", msgs)
	}
	var s event.Stats
	tl.AddTo(&s)
	want := []event.Counter{{Kind: event.CountLost, Name: "a", Value: 4}, {Kind: event.CountDropped, Name: "b", Value: 5}}
	if len(s.Counters) != 2 || s.Counters[0] != want[0] || s.Counters[1] != want[1] {
		t.Errorf("stats %+v", s.Counters)
	}
}
