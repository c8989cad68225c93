package output

import (
	"strconv"
	"unicode/utf8"

	"github.com/iotrace/iotrace/internal/jsonenc"
	"github.com/iotrace/iotrace/internal/termesc"
)

// appendPad appends n spaces (none when n <= 0).
func appendPad(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	return b
}

// appendLeft appends s and pads it with spaces to width.
func appendLeft(b []byte, s string, width int) []byte {
	b = append(b, s...)
	return appendPad(b, width-len(s))
}

// alignRight right-aligns the bytes b[start:] in width by inserting
// spaces before them.
func alignRight(b []byte, start, width int) []byte {
	n := len(b) - start
	if n >= width {
		return b
	}
	pad := width - n
	b = appendPad(b, pad)
	copy(b[start+pad:], b[start:start+n])
	for i := start; i < start+pad; i++ {
		b[i] = ' '
	}
	return b
}

// appendSeconds appends ns as seconds with microsecond precision:
// "12.345678", "-0.000100".
func appendSeconds(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		if ns == -ns { // MinInt64
			return append(b, "inf"...)
		}
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1e9, 10)
	b = append(b, '.')
	return appendFrac(b, uint64(ns%1e9)/1000, 6)
}

// appendFrac appends v zero-padded to digits digits.
func appendFrac(b []byte, v uint64, digits int) []byte {
	var tmp [20]byte
	i := len(tmp)
	for d := 0; d < digits; d++ {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, tmp[i:]...)
}

// appendDuration appends a duration in the largest unit that keeps it
// readable: "850ns", "12.3us", "1.234ms", "2.500s".
func appendDuration(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
		if ns < 0 {
			return append(b, "inf"...)
		}
	}
	switch {
	case ns < 1_000:
		b = strconv.AppendInt(b, ns, 10)
		return append(b, "ns"...)
	case ns < 1_000_000:
		b = strconv.AppendInt(b, ns/1_000, 10)
		b = append(b, '.')
		b = appendFrac(b, uint64(ns%1_000)/100, 1)
		return append(b, "us"...)
	case ns < 1_000_000_000:
		b = strconv.AppendInt(b, ns/1_000_000, 10)
		b = append(b, '.')
		b = appendFrac(b, uint64(ns%1_000_000)/1_000, 3)
		return append(b, "ms"...)
	}
	b = strconv.AppendInt(b, ns/1_000_000_000, 10)
	b = append(b, '.')
	b = appendFrac(b, uint64(ns%1_000_000_000)/1_000_000, 3)
	return append(b, 's')
}

// appendBytes appends a byte count in binary units: "512 B", "4 KiB",
// "1.5 MiB".
func appendBytes(b []byte, n uint64) []byte {
	const unit = 1024
	if n < unit {
		b = strconv.AppendUint(b, n, 10)
		return append(b, " B"...)
	}
	units := "KMGTPE"
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < len(units)-1; m /= unit {
		div *= unit
		exp++
	}
	b = strconv.AppendUint(b, n/div, 10)
	if rem := n % div * 10 / div; rem != 0 {
		b = append(b, '.')
		b = append(b, byte('0'+rem))
	}
	b = append(b, ' ', units[exp], 'i', 'B')
	return b
}

// needsQuote reports whether s must be quoted to be read back as one
// field of a text line: empty, or with spaces, quotes, control characters
// or invalid UTF-8.
func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '"' || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsPrint(r) {
			return true
		}
		i += n
	}
	return false
}

// appendPath appends s as is, or quoted for people (appendTextQuote) when
// it has spaces, quotes or control characters.
func appendPath(b []byte, s string) []byte {
	if needsQuote(s) {
		return appendTextQuote(b, s)
	}
	return append(b, s...)
}

// appendSafe appends s by the terminal rule (internal/termesc) without
// quotes, for fixed columns (process names, command lines) where quoting
// would break alignment.
func appendSafe(b []byte, s string) []byte { return termesc.Append(b, s) }

// appendHex appends v as "0x" and lower-case hex digits.
func appendHex(b []byte, v uint64) []byte {
	b = append(b, '0', 'x')
	return strconv.AppendUint(b, v, 16)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte { return jsonenc.AppendString(b, s) }

// appendCSV appends s as one CSV field (RFC 4180): quoted when it holds a
// comma, a quote, a line break or leading/trailing space.
func appendCSV(b []byte, s string) []byte {
	q := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', '"', '\n', '\r':
			q = true
		}
	}
	if len(s) > 0 && (s[0] == ' ' || s[len(s)-1] == ' ') {
		q = true
	}
	if !q {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}
