package bytesize

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int{"4096": 4096, "8M": 8 << 20, "512k": 512 << 10, "1G": 1 << 30, "64MiB": 64 << 20, " 2KB ": 2 << 10} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1M", "M", "1T", "2048G", "1.5M"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
