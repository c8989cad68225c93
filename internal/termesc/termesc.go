// Package termesc is iotrace's one rule for showing names from the traced
// system (paths, process names, command lines, marker notes) to a person:
// every human-facing output (text, report, compare, csv and script output
// on a terminal) applies it, so that a hostile file name cannot move the
// cursor, retitle the window, ring the bell or reorder the line.
//
// The rule keeps every printable character (backslashes included, so
// C:\Windows reads as spelled) and shows:
//
//   - a C0 control character or DEL as its Unicode control picture: ESC as
//     ␛, BEL as ␇, a newline as ␊, a tab as ␉, DEL as ␡;
//   - another character that does not print (C1 controls such as U+009B,
//     bidirectional overrides such as U+202E, other format characters) as
//     <U+XXXX>;
//   - a byte that is not UTF-8 as <0xNN>.
//
// The output is one line of printable text whatever the input. It is for
// people: jsonl and csv written to a file keep the exact bytes.
package termesc

import (
	"strconv"
	"unicode/utf8"
)

// Clean reports whether s shows as itself under the rule.
func Clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < ' ' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}

// String returns s under the rule.
func String(s string) string {
	if Clean(s) {
		return s
	}
	return string(Append(make([]byte, 0, len(s)+16), s))
}

// Append appends s under the rule.
func Append(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			b = AppendByte(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = appendHexByte(b, c)
		case !strconv.IsPrint(r):
			b = appendCodePoint(b, r)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

// AppendByte appends the ASCII character c (below utf8.RuneSelf) under
// the rule.
func AppendByte(b []byte, c byte) []byte {
	switch {
	case c < ' ':
		return utf8.AppendRune(b, 0x2400+rune(c))
	case c == 0x7f:
		return utf8.AppendRune(b, 0x2421)
	}
	return append(b, c)
}

const hexDigits = "0123456789ABCDEF"

func appendHexByte(b []byte, c byte) []byte {
	return append(b, '<', '0', 'x', hexDigits[c>>4], hexDigits[c&0xf], '>')
}

func appendCodePoint(b []byte, r rune) []byte {
	b = append(b, "<U+"...)
	digits := 4
	for r>>(4*digits) != 0 {
		digits++
	}
	for d := digits - 1; d >= 0; d-- {
		b = append(b, hexDigits[(r>>(4*d))&0xf])
	}
	return append(b, '>')
}
