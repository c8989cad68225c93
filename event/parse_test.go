package event

import "testing"

// TestParseInvertsString: every value of a source, layer, op and status,
// named or not, parses back from its String.
func TestParseInvertsString(t *testing.T) {
	for v := 0; v < 256; v++ {
		if got, err := ParseSource(Source(v).String()); err != nil || got != Source(v) {
			t.Errorf("ParseSource(%q) = %v, %v", Source(v).String(), got, err)
		}
		if l := Layer(v); l != LayerUnknown {
			if got, err := ParseLayer(l.String()); err != nil || got != l {
				t.Errorf("ParseLayer(%q) = %v, %v", l.String(), got, err)
			}
		}
		if got, err := ParseOp(Op(v).String()); err != nil || got != Op(v) {
			t.Errorf("ParseOp(%q) = %v, %v", Op(v).String(), got, err)
		}
		if got, err := ParseStatus(Status(v).String()); err != nil || got != Status(v) {
			t.Errorf("ParseStatus(%q) = %v, %v", Status(v).String(), got, err)
		}
	}
	for _, bad := range []string{"op()", "op(256)", "op(012)", "op(1", "op(-1)", "op(1x)", "layer(1000)"} {
		if _, err := ParseOp(bad); err == nil {
			t.Errorf("ParseOp(%q) accepted", bad)
		}
	}
	if _, err := ParseLayer("layer(1000)"); err == nil {
		t.Errorf("ParseLayer accepted layer(1000)")
	}
}
