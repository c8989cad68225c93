package event

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutString: cut at a character boundary, never inside one.
func TestCutString(t *testing.T) {
	s := strings.Repeat("é", 10) // 2 bytes each
	for n := 0; n <= len(s)+1; n++ {
		c := CutString(s, n)
		if len(c) > n || !utf8.ValidString(c) || len(c) < min(n, len(s))-1 || !strings.HasPrefix(s, c) {
			t.Errorf("CutString(%d) = %q", n, c)
		}
	}
}

// TestCutter: events and facts over the limits of their OS are cut and
// counted, the rest untouched; EventOver and FactOver agree with them.
func TestCutter(t *testing.T) {
	c := NewCutter("linux")
	e := Event{Path: strings.Repeat("a", MaxPathLinux+1), Comm: "sh"}
	if !c.EventOver(&e) {
		t.Fatal("EventOver: false for a path over PATH_MAX")
	}
	c.Event(&e)
	f := Fact{Kind: FactProcess, Detail: strings.Repeat("c", MaxStringLinux+5), Kernel: make([]uint64, MaxStackFrames+1)}
	if !c.FactOver(&f) {
		t.Fatal("FactOver: false")
	}
	c.Fact(&f)
	if len(e.Path) != MaxPathLinux || e.Comm != "sh" || len(f.Detail) != MaxStringLinux || len(f.Kernel) != MaxStackFrames || f.Flags != FactKernelTruncated {
		t.Errorf("cut to %d, %q, %d, %d frames (%v)", len(e.Path), e.Comm, len(f.Detail), len(f.Kernel), f.Flags)
	}
	if c.EventOver(&e) || c.FactOver(&f) {
		t.Error("still over after the cut")
	}
	var s Stats
	c.AddTo(&s)
	if s.Get(CountDropped, StatPathsCut) != 1 || s.Get(CountDropped, StatStringsCut) != 1 || s.Get(CountDropped, StatStacksCut) != 1 || s.Get(CountDropped, StatFramesCut) != 1 {
		t.Errorf("counters %+v", s.Counters)
	}
	// A Windows trace holds 32,767 UTF-16 units: 60 KB paths are whole.
	w := NewCutter("windows")
	if e := (Event{Path: strings.Repeat("a", 60_000)}); w.EventOver(&e) {
		t.Error("a 60 KB path over the Windows limit")
	}
}
