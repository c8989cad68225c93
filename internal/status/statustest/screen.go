// Package statustest plays what a terminal received, for the tests of
// what iotrace draws on one (package status and the commands' pty tests).
package statustest

import "strings"

// Screen plays b on a terminal that knows carriage returns, backspaces,
// newlines and text (a pty turns "\n" into "\r\n"), and returns its lines,
// the last one where the cursor is, and the cursor's column.
func Screen(b []byte) (lines []string, col int) {
	var cur []rune
	for _, r := range string(b) {
		switch r {
		case '\r':
			col = 0
		case '\b':
			col = max(col-1, 0)
		case '\n':
			lines = append(lines, strings.TrimRight(string(cur), " "))
			cur, col = nil, 0
		default:
			for len(cur) <= col {
				cur = append(cur, ' ')
			}
			cur[col] = r
			col++
		}
	}
	return append(lines, strings.TrimRight(string(cur), " ")), col
}
