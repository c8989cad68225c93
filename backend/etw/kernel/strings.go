package kernel

import (
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// WStr is a UTF-16LE string in an event payload, without its terminator.
// It aliases the payload; String copies it out.
type WStr []byte

// String converts w to UTF-8. Unpaired surrogates become U+FFFD. An
// ASCII string (the common case for paths) costs one allocation.
func (w WStr) String() string {
	n := len(w) / 2
	if n == 0 {
		return ""
	}
	b := make([]byte, n)
	for i := range b {
		lo, hi := w[2*i], w[2*i+1]
		if hi != 0 || lo >= 0x80 {
			return w.decode()
		}
		b[i] = lo
	}
	// b is not referenced anywhere else: the string may own it.
	return unsafe.String(&b[0], n)
}

// decode converts a string that is not all ASCII.
func (w WStr) decode() string {
	u := make([]uint16, len(w)/2)
	for i := range u {
		u[i] = uint16(w[2*i]) | uint16(w[2*i+1])<<8
	}
	return string(utf16.Decode(u))
}

// Len returns the length in UTF-16 code units.
func (w WStr) Len() int { return len(w) / 2 }

// AStr is an ANSI (in practice ASCII or UTF-8) string in an event payload,
// without its terminator.
type AStr []byte

// String returns a as a string; invalid UTF-8 bytes are read as Latin-1.
func (a AStr) String() string {
	if utf8.Valid(a) {
		return string(a)
	}
	r := make([]rune, len(a))
	for i, c := range a {
		r[i] = rune(c)
	}
	return string(r)
}

// Base returns the last element of the path w (after its last '\' or '/').
func (w WStr) Base() WStr {
	for i := len(w) - 2; i >= 0; i -= 2 {
		if w[i+1] == 0 && (w[i] == '\\' || w[i] == '/') {
			return w[i+2:]
		}
	}
	return w
}

// HasSuffixFold reports whether w ends with the ASCII string suffix,
// ignoring ASCII case.
func (w WStr) HasSuffixFold(suffix string) bool {
	n := len(suffix)
	if len(w)/2 < n {
		return false
	}
	off := len(w)&^1 - 2*n
	for i := 0; i < n; i++ {
		c, hi := w[off+2*i], w[off+2*i+1]
		if hi != 0 || lower(c) != lower(suffix[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
