package marker

import (
	"strings"
	"testing"
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
