package status

import (
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Line is the last line of a terminal, redrawn in place. Draw writes a
// carriage return, the text cut to the terminal's width, and spaces over
// what the previous text left (then backspaces to the text's end); Clear blanks the line and leaves the cursor
// at its start. Other output to the same terminal goes through Write,
// which clears the line first (the next Draw puts it back), so that it
// never lands after the status text. A Line is safe for concurrent use.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	width func() int // the terminal's columns; 0 when not known
	drawn int        // columns of the text on the line now
}

// NewLine returns a Line on w, a terminal width columns wide (width may
// be nil, or return 0 when it does not know: 80 columns are assumed).
func NewLine(w io.Writer, width func() int) *Line {
	return &Line{w: w, width: width}
}

// columns is how much of a line the text may take: one less than the
// terminal's width, so that the cursor never wraps to the next line.
func (l *Line) columns() int {
	n := 0
	if l.width != nil {
		n = l.width()
	}
	if n <= 0 {
		n = 80
	}
	return max(n-1, 1)
}

// Draw shows text on the line (its first line only), in place of what
// was there.
func (l *Line) Draw(text string) {
	text, _, _ = strings.Cut(text, "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	text = cut(text, l.columns())
	n := utf8.RuneCountInString(text)
	pad := max(l.drawn-n, 0)
	// Spaces over the rest of the old text, then back to the new one's
	// end.
	io.WriteString(l.w, "\r"+text+strings.Repeat(" ", pad)+strings.Repeat("\b", pad))
	l.drawn = n
}

// Clear blanks the line and returns the cursor to its start.
func (l *Line) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
}

func (l *Line) clear() {
	if l.drawn == 0 {
		return
	}
	io.WriteString(l.w, "\r"+strings.Repeat(" ", l.drawn)+"\r")
	l.drawn = 0
}

// Write clears the line and writes p, output that is not the status
// line's.
func (l *Line) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	return l.w.Write(p)
}

// cut returns the first n runes of s.
func cut(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// Start draws text() on l every interval (one second when 0), the first
// time after one interval, so that work done within it shows nothing. The
// function it returns stops the drawing and clears the line; call it
// before the command's last words.
func Start(l *Line, interval time.Duration, text func() string) (stop func()) {
	if interval <= 0 {
		interval = time.Second
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				l.Draw(text())
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-exited
			l.Clear()
		})
	}
}
