package termesc

import (
	"bytes"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/lib/libc.so.6":         "/usr/lib/libc.so.6",
		`C:\Program Files\x "y".dll`: `C:\Program Files\x "y".dll`,
		"évier ✓ 日本":                 "évier ✓ 日本",
		"a\x1b]0;pwned\x07b":         "a␛]0;pwned␇b",
		"two\nlines\ttab\r":          "two␊lines␉tab␍",
		"del\x7f":                    "del␡",
		"c1\u009b31m":                "c1<U+009B>31m",
		"bidi\u202egnp.exe":          "bidi<U+202E>gnp.exe",
		"bad\xff\xfeutf8":            "bad<0xFF><0xFE>utf8",
		"cut\xe2\x82":                "cut<0xE2><0x82>",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
		if Clean(in) != (in == want) {
			t.Errorf("Clean(%q) = %v", in, Clean(in))
		}
	}
}

// TestWriter: newlines and tabs keep their meaning, everything else
// follows the rule, and a character cut between writes is whole.
func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	in := "ok\tname=\x1b[2J\x07\n日本\u009b\xff\n"
	for i := 0; i < len(in); i++ { // one byte at a time
		if n, err := w.Write([]byte{in[i]}); n != 1 || err != nil {
			t.Fatal(n, err)
		}
	}
	w.Write([]byte("end\xe6"))
	w.Flush()
	want := "ok\tname=␛[2J␇\n日本<U+009B><0xFF>\nend<0xE6>"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Errorf("raw control bytes written")
	}
}
