package status

import (
	"bytes"
	"github.com/iotrace/iotrace/internal/status/statustest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		c    Counts
		want string
	}{
		{Counts{}, "0 events, 0 lost, 0:00"},
		{Counts{Events: 1234567, Bytes: 50 << 20, HaveBytes: true, Lost: 12, Elapsed: 62 * time.Second}, "1,234,567 events, 50.0 MiB, 12 lost, 1:02"},
		{Counts{Events: 999, Bytes: 3 << 20, BytesOf: 256 << 20, HaveBytes: true, Elapsed: 3723 * time.Second}, "999 events, 3.00 MiB of 256 MiB, 0 lost, 1:02:03"},
		{Counts{Events: 1000, HaveBytes: true, Elapsed: 999 * time.Millisecond}, "1,000 events, 0 B, 0 lost, 0:00"},
	} {
		if got := Format(tc.c); got != tc.want {
			t.Errorf("Format(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.00 KiB", 1536: "1.50 KiB", 100 << 20: "100 MiB", 1 << 40: "1.00 TiB", 1<<64 - 1: "16.0 EiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestClock(t *testing.T) {
	for d, want := range map[time.Duration]string{-time.Second: "0:00", 7 * time.Second: "0:07", 754 * time.Second: "12:34", 3600 * time.Second: "1:00:00"} {
		if got := Clock(d); got != want {
			t.Errorf("Clock(%v) = %q, want %q", d, got, want)
		}
	}
}

// screen plays what a terminal received.
func screen(b []byte) ([]string, int) { return statustest.Screen(b) }

// TestLineInPlace: each draw replaces the last on the same line, a
// shorter one leaves nothing of the longer behind, the cursor stays at the
// text's end, and text is cut to the terminal's width.
func TestLineInPlace(t *testing.T) {
	var b bytes.Buffer
	l := NewLine(&b, func() int { return 20 })
	l.Draw("12 events, 0 lost")
	l.Draw("13 events")
	lines, col := screen(b.Bytes())
	if len(lines) != 1 || lines[0] != "13 events" || col != len("13 events") {
		t.Fatalf("screen %q, cursor at %d", lines, col)
	}
	l.Draw("a line far longer than twenty columns")
	if lines, _ := screen(b.Bytes()); lines[0] != "a line far longer t" {
		t.Errorf("not cut to the width: %q", lines[0])
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("escape codes written: %q", b.String())
	}
}

// TestLineWriteClears: other output clears the status first, and Clear
// leaves an empty line with the cursor at its start.
func TestLineWriteClears(t *testing.T) {
	var b bytes.Buffer
	l := NewLine(&b, nil)
	l.Draw("1,234 events, 0 lost, 0:01")
	l.Write([]byte("iotrace: warning\n"))
	l.Draw("2,000 events, 0 lost, 0:02")
	l.Clear()
	l.Clear() // nothing more
	lines, col := screen(b.Bytes())
	if want := []string{"iotrace: warning", ""}; strings.Join(lines, "|") != strings.Join(want, "|") || col != 0 {
		t.Errorf("screen %q cursor %d, want %q at 0", lines, col, want)
	}
	if n := strings.Count(b.String(), "\r"); n != 6 {
		t.Errorf("%d carriage returns in %q, want 6 (the second Clear writes nothing)", n, b.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the ticker's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}

// TestStart: nothing is drawn within the first interval; then the text is
// redrawn each interval; stop clears it, and a second stop does nothing.
func TestStart(t *testing.T) {
	var b syncBuffer
	var mu sync.Mutex
	n := 0
	stop := Start(NewLine(&b, nil), 20*time.Millisecond, func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return strings.Repeat("x", n)
	})
	if len(b.Bytes()) != 0 {
		t.Fatalf("drawn at once: %q", b.Bytes())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		done := n >= 3
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	stop()
	lines, col := screen(b.Bytes())
	if len(lines) != 1 || lines[0] != "" || col != 0 {
		t.Errorf("after stop: screen %q cursor %d", lines, col)
	}
	if !strings.Contains(string(b.Bytes()), "\rxxx") {
		t.Errorf("not redrawn: %q", b.Bytes())
	}
}

// TestBar: the bar says what is read, how much and how fast, on one line
// without escape codes.
func TestBar(t *testing.T) {
	b := NewBar("report big.iot", 1000<<20, 20)
	b.Text(0)
	got := b.Text(400 << 20)
	for _, want := range []string{"report big.iot", "40%", "400/1000 MiB", "|"} {
		if !strings.Contains(got, want) {
			t.Errorf("bar %q lacks %q", got, want)
		}
	}
	if strings.ContainsAny(got, "\r\n\x1b") {
		t.Errorf("bar %q holds control characters", got)
	}
	if got := b.Text(1000 << 20); !strings.Contains(got, "100%") {
		t.Errorf("bar at the end: %q", got)
	}
}
