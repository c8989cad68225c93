package status

import (
	"io"
	"strings"

	"github.com/schollz/progressbar/v3"
)

// Bar is the text of a progress bar of a long read: what is read, the
// share done as a percentage and a bar, the bytes and the rate, and the
// time spent and left ("report big.iot  40% |████      | (400/1000 MiB,
// 95 MiB/s) [4s:6s]"). github.com/schollz/progressbar renders it; a Line
// draws it. Not safe for concurrent use: one goroutine sets and reads it.
type Bar struct {
	pb *progressbar.ProgressBar
}

// NewBar returns the bar of a read of total bytes, described by
// description, its bar width columns wide. Its clock (rate, time left)
// starts now.
func NewBar(description string, total int64, width int) *Bar {
	b := &Bar{pb: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(io.Discard), // Text gives what it draws
		progressbar.OptionThrottle(0),
		progressbar.OptionSetDescription(description),
		progressbar.OptionSetWidth(width),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionSetPredictTime(true),
	)}
	b.pb.RenderBlank() // starts the clock
	return b
}

// Text returns the bar with done bytes read.
func (b *Bar) Text(done int64) string {
	b.pb.Set64(done)
	return strings.TrimLeft(b.pb.String(), "\r")
}
