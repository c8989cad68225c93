package kernel

import (
	"testing"
	"unicode/utf16"
)

func wstrOf(s string) WStr {
	var b []byte
	for _, c := range utf16.Encode([]rune(s)) {
		b = append(b, byte(c), byte(c>>8))
	}
	return b
}

func TestWStr(t *testing.T) {
	for _, s := range []string{"", `C:\Windows\System32\ntdll.dll`, `C:\Users\Zoë\日本.txt`, "a\U0001F600b"} {
		w := wstrOf(s)
		if got := w.String(); got != s {
			t.Errorf("String(%q) = %q", s, got)
		}
	}
	// An unpaired surrogate becomes U+FFFD; an odd trailing byte is ignored.
	if got := WStr([]byte{0x00, 0xD8, 'a', 0, 'b'}).String(); got != "\uFFFDa" {
		t.Errorf("unpaired surrogate: %q", got)
	}
	w := wstrOf(`\Device\HarddiskVolume2\Windows\System32\SearchProtocolHost.exe`)
	if got := w.Base().String(); got != "SearchProtocolHost.exe" {
		t.Errorf("Base = %q", got)
	}
	if wstrOf("x").Base().String() != "x" || !w.HasSuffixFold(".EXE") || w.HasSuffixFold(".dll") ||
		wstrOf("a").HasSuffixFold(".dll") {
		t.Error("Base/HasSuffixFold")
	}
}
