package modident

import "testing"

// TestPEID: the pe: identity is the symbol-server key (time stamp as 8
// hex digits, size as few as it takes), then the checksum when not 0.
func TestPEID(t *testing.T) {
	for _, c := range []struct {
		tds      uint32
		size     uint64
		checksum uint32
		want     string
	}{
		{0x5010AC4B, 0x748000, 0x6AA6C8, "pe:5010AC4B748000/006AA6C8"},
		{0x5010AC4B, 0x20000, 0, "pe:5010AC4B20000"},
		{0xA, 0x0, 0xFFFFFFFF, "pe:0000000A0/FFFFFFFF"},
		{0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 1, "pe:FFFFFFFFFFFFFFFFFFFFFFFF/00000001"},
	} {
		if got := formatPEID(c.tds, c.size, c.checksum); got != c.want {
			t.Errorf("formatPEID(%#x, %#x, %#x) = %s, want %s", c.tds, c.size, c.checksum, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = formatPEID(0x5010AC4B, 0x748000, 0x6AA6C8) }); n > 1 {
		t.Errorf("peID: %v allocations, want 1", n)
	}
}
