// Package status draws one line of live counters on a terminal while a
// command works: the events, bytes and losses of a live trace, or how far
// a long read has come. It formats the line (Format), redraws it in place
// on a writer (Line: a carriage return and spaces over what it drew
// before, no escape codes, so a console that knows none shows it too) and
// limits how often (Start: once a second). Whether the writer is a
// terminal and how wide is golang.org/x/term's answer, asked by the
// caller; progress bars of long reads are drawn by
// github.com/schollz/progressbar (Bar). Line and Format are tested
// without a terminal.
package status

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Counts are what a live status line shows.
type Counts struct {
	// Events is the number of events written so far.
	Events uint64
	// Bytes is the size of the output so far; BytesOf, when not 0, the
	// budget it counts against (a flight recorder's ring). HaveBytes
	// says whether Bytes is known (a script's run writes no trace).
	Bytes, BytesOf uint64
	HaveBytes      bool
	// Lost is the number of events the backend lost so far.
	Lost uint64
	// Elapsed is the time since the trace started.
	Elapsed time.Duration
}

// Format renders c as one line: "1,234,567 events, 48.2 MiB, 0 lost, 1:02".
func Format(c Counts) string {
	parts := []string{Count(c.Events) + " events"}
	if c.HaveBytes {
		b := Bytes(c.Bytes)
		if c.BytesOf > 0 {
			b += " of " + Bytes(c.BytesOf)
		}
		parts = append(parts, b)
	}
	parts = append(parts, Count(c.Lost)+" lost", Clock(c.Elapsed))
	return strings.Join(parts, ", ")
}

// Count renders n with thousands separators: 1234567 is "1,234,567".
func Count(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// Bytes renders n in binary units with three significant digits:
// "512 B", "1.50 KiB", "48.2 MiB", "3.00 GiB".
func Bytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	unit := string(units[u]) + "iB"
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f %s", v, unit)
	case v < 100:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

// Clock renders d as minutes:seconds, or hours:minutes:seconds from an
// hour on: "0:07", "12:34", "1:02:03".
func Clock(d time.Duration) string {
	s := int64(max(d, 0) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// Reading renders the progress of a read whose end is not known: "x.etl:
// 1,234,567 events, 0:12".
func Reading(name string, events uint64, elapsed time.Duration) string {
	return fmt.Sprintf("%s: %s events, %s", name, Count(events), Clock(elapsed))
}
