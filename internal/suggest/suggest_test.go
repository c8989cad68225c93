package suggest

import "testing"

// TestHint: a slip of one or two letters is named; a name far from every
// known one, or a short one any name is near, gets no hint.
func TestHint(t *testing.T) {
	ops := []string{"open", "read", "write", "close", "stat", "bread", "readdir"}
	for _, c := range []struct{ name, want string }{
		{"reed", ` (did you mean "read"?)`},
		{"raed", ` (did you mean "read"?)`},
		{"wirte", ` (did you mean "write"?)`},
		{"opne", ` (did you mean "open"?)`},
		{"readdri", ` (did you mean "readdir"?)`},
		{"x", ""},
		{"zz", ""},
		{"truncate", ""},
		{"", ""},
	} {
		if got := Hint(c.name, ops); got != c.want {
			t.Errorf("Hint(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
