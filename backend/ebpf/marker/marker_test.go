package marker

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/ring"
)

func TestEncodeDecode(t *testing.T) {
	m, err := decode(encode(123, 45, "phase 2"))
	if err != nil || m.Time != 123 || m.Tid != 45 || m.Text != "phase 2" {
		t.Errorf("%+v %v", m, err)
	}
	long := strings.Repeat("x", MaxText+10)
	if m, _ := decode(encode(1, 1, long)); len(m.Text) != MaxText {
		t.Errorf("long text kept %d bytes", len(m.Text))
	}
	for _, b := range [][]byte{nil, []byte("IOTMARK1"), []byte("garbage-garbage-garbage")} {
		if _, err := decode(b); err == nil {
			t.Errorf("decode(%q) accepted", b)
		}
	}
}

// TestGuardSave: a save request is taken from root or the recording's
// user; from anyone else, or a sender the kernel did not name, it stays
// a marker saying it was refused (issue 25, item 10). Plain markers pass
// from anyone.
func TestGuardSave(t *testing.T) {
	const self = 1000
	for _, c := range []struct {
		uid     uint32
		known   bool
		text    string
		refused bool
	}{
		{0, true, ring.SaveRequestText("x"), false},
		{self, true, ring.SaveRequestText(""), false},
		{1001, true, ring.SaveRequestText("x"), true},
		{0, false, ring.SaveRequestText("x"), true},
		{1001, true, "a plain marker", false},
	} {
		m := Mark{Uid: c.uid, Text: c.text}
		guardSave(&m, c.known, self)
		want := c.text
		if c.refused {
			want = RefusedPrefix + strings.TrimPrefix(c.text, ring.SavePrefix)
		}
		if m.SaveRefused != c.refused || m.Text != want {
			t.Errorf("uid %d (known %v) %q: %+v", c.uid, c.known, c.text, m)
		}
	}
}
