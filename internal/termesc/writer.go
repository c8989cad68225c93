package termesc

import (
	"bytes"
	"io"
	"strconv"
	"unicode/utf8"
)

// Writer applies the rule to a stream of lines (script output, csv on a
// terminal): every byte passes through it except newline and tab, which
// keep their layout meaning. A character cut between two writes is held
// until the next one; Flush writes what is held.
type Writer struct {
	w    io.Writer
	held []byte
	buf  []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write implements io.Writer; it returns len(p) when w took everything.
func (e *Writer) Write(p []byte) (int, error) {
	s := p
	if len(e.held) > 0 {
		s = append(append([]byte(nil), e.held...), p...)
		e.held = e.held[:0]
	}
	b := e.buf[:0]
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '\n' || c == '\t' {
				b = append(b, c)
			} else {
				b = AppendByte(b, c)
			}
			i++
			continue
		}
		if !utf8.FullRune(s[i:]) {
			e.held = append(e.held, s[i:]...) // the rest comes next
			break
		}
		r, n := utf8.DecodeRune(s[i:])
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
	e.buf = b
	if _, err := e.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a character cut at the end of the stream as its bytes.
func (e *Writer) Flush() error {
	if len(e.held) == 0 {
		return nil
	}
	var b []byte
	for _, c := range e.held {
		b = appendHexByte(b, c)
	}
	e.held = e.held[:0]
	_, err := e.w.Write(b)
	return err
}

// Lines returns s by the rule, except that newlines and tabs stay (a
// multi-line message).
func Lines(s string) string {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Write([]byte(s))
	w.Flush()
	return b.String()
}
