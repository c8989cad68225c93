package resolve

import "testing"

func TestHistoryLifetime(t *testing.T) {
	h := NewHistory[uint64]()
	h.Bind(1, 10, "/a")
	h.Unbind(1, 20)
	h.Bind(1, 30, "/b")
	cases := []struct {
		t    int64
		want string
		ok   bool
	}{
		{5, "", false}, {10, "/a", true}, {15, "/a", true},
		{20, "/a", true}, // the closing event itself still resolves
		{25, "", false}, {30, "/b", true}, {1 << 40, "/b", true},
	}
	for _, c := range cases {
		got, ok := h.Lookup(1, c.t)
		if got != c.want || ok != c.ok {
			t.Errorf("Lookup(1, %d) = %q, %v; want %q, %v", c.t, got, ok, c.want, c.ok)
		}
	}
}

func TestHistoryRebindAtSameTime(t *testing.T) {
	h := NewHistory[int]()
	h.Bind(7, 10, "/old")
	h.Bind(7, 20, "/new") // implicit end of /old at 20
	if got, _ := h.Lookup(7, 19); got != "/old" {
		t.Errorf("at 19: %q", got)
	}
	if got, _ := h.Lookup(7, 20); got != "/new" {
		t.Errorf("at 20: %q, want the later binding", got)
	}
}

func TestHistoryRundownRetroactive(t *testing.T) {
	h := NewHistory[int]()
	// A rundown at the end of the trace names a key never seen before:
	// it applies to the whole trace.
	h.BindRundown(1, 1000, "/rundown")
	if got, ok := h.Lookup(1, 5); !ok || got != "/rundown" {
		t.Errorf("retroactive rundown: %q %v", got, ok)
	}
	// A key bound during the trace keeps its name.
	h.Bind(2, 10, "/created")
	h.BindRundown(2, 1000, "/other")
	if got, _ := h.Lookup(2, 500); got != "/created" {
		t.Errorf("rundown overrode a live binding: %q", got)
	}
	if got, ok := h.Lookup(2, 5); ok {
		t.Errorf("before its creation key 2 resolved to %q", got)
	}
	// A key whose binding ended is named from that end on.
	h.Bind(3, 10, "/deleted")
	h.Unbind(3, 20)
	h.BindRundown(3, 1000, "/reused")
	if got, _ := h.Lookup(3, 15); got != "/deleted" {
		t.Errorf("at 15: %q", got)
	}
	if got, _ := h.Lookup(3, 50); got != "/reused" {
		t.Errorf("at 50: %q", got)
	}
}
