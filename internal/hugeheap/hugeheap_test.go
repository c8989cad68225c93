package hugeheap

import (
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{
		"always [madvise] never\n": ModeMadvise,
		"[always] madvise never\n": ModeAlways,
		"always madvise [never]":   ModeNever,
	} {
		got, err := parseMode([]byte(in))
		if err != nil || got != want {
			t.Errorf("parseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "always madvise never", "][", "[sometimes]"} {
		if m, err := parseMode([]byte(in)); err == nil {
			t.Errorf("parseMode(%q) = %q, want an error", in, m)
		}
	}
}

const maps = `00400000-00e49000 r-xp 00000000 08:01 1 /usr/bin/iotrace
338a4000000-338a7800000 ---p 00000000 00:00 0 
338a7800000-338a8800000 rw-p 00000000 00:00 0 
7f30cd2f8000-7f30cd3c8000 rw-p 00000000 00:00 0
`

func TestMappingOf(t *testing.T) {
	lo, hi, err := mappingOf([]byte(maps), 0x338a8000010)
	if err != nil || lo != 0x338a7800000 || hi != 0x338a8800000 {
		t.Fatalf("mappingOf = %#x-%#x, %v", lo, hi, err)
	}
	if _, _, err := mappingOf([]byte(maps), 0x338a8800000); err == nil || !strings.Contains(err.Error(), "no mapping holds") {
		t.Errorf("an address past every mapping: %v", err)
	}
	if _, _, err := mappingOf([]byte("00400000 r-xp\n"), 0x400000); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a line without a range: %v", err)
	}
	if _, _, err := mappingOf([]byte("\n2000-1000 rw-p\n"), 0x1500); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("an empty range: %v", err)
	}
}

func FuzzMappingOf(f *testing.F) {
	f.Add([]byte(maps), uint64(0x338a8000010))
	f.Add([]byte("0-1\n"), uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, addr uint64) {
		lo, hi, err := mappingOf(b, addr)
		if err == nil && (addr < lo || addr >= hi) {
			t.Fatalf("%#x not in %#x-%#x", addr, lo, hi)
		}
	})
}
