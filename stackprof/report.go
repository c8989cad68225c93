package stackprof

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/termesc"
	"github.com/iotrace/iotrace/stacks"
)

// Sample is one stack's aggregate: the events of one op and process name
// issued from one stack.
type Sample struct {
	Op     string
	Comm   string
	Block  bool // the op is a block I/O op
	Frames []stacks.Frame
	Totals
}

// Samples returns every aggregate, in first-seen order.
func (a *Aggregator) Samples() []Sample {
	out := make([]Sample, 0, len(a.order))
	for _, s := range a.order {
		out = append(out, Sample{Op: s.root, Comm: s.comm, Block: s.block, Frames: s.frames, Totals: s.Totals})
	}
	return out
}

// Top returns the n samples with the largest weight among those keep
// selects (nil: all), largest first; samples of weight 0 are left out.
func Top(samples []Sample, by Weight, n int, keep func(*Sample) bool) []Sample {
	var out []Sample
	for i := range samples {
		if (keep == nil || keep(&samples[i])) && samples[i].value(by) > 0 {
			out = append(out, samples[i])
		}
	}
	slices.SortStableFunc(out, func(x, y Sample) int { return cmp.Compare(y.value(by), x.value(by)) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func (s *Sample) value(by Weight) int64 {
	switch by {
	case WeightBytes:
		return s.Bytes
	case WeightLatency:
		return s.Latency
	}
	return s.Count
}

// WriteReport writes the stack section of iotrace report --stacks: the
// top n stacks of file I/O by time, by bytes and by count, of each op by
// time, and of block I/O by time, by bytes and by count; each with its
// share of its group's total and its frames, innermost first. Names from
// the traced system follow the terminal rule.
func (a *Aggregator) WriteReport(w io.Writer, n int) error {
	bw := bufio.NewWriter(w)
	all := a.Samples()
	withStacks := 0
	for _, s := range all {
		if len(s.Frames) > 0 && s.Frames[0].Function != noStack {
			withStacks++
		}
	}
	fmt.Fprintf(bw, "\nSTACKS: %d distinct (op, process, stack) of %d events\n", withStacks, a.totals.Count)
	if withStacks == 0 {
		bw.WriteString("  the trace has no stacks (record with --stacks)\n")
		return bw.Flush()
	}
	file := func(s *Sample) bool { return !s.Block }
	block := func(s *Sample) bool { return s.Block }
	for _, g := range []struct {
		title string
		keep  func(*Sample) bool
	}{{"file I/O", file}, {"block I/O", block}} {
		for _, by := range []Weight{WeightLatency, WeightBytes, WeightCount} {
			a.writeTop(bw, all, "Top stacks of "+g.title+" by "+weightName(by), by, n, g.keep)
		}
	}
	var ops []string
	for _, s := range all {
		if !slices.Contains(ops, s.Op) {
			ops = append(ops, s.Op)
		}
	}
	slices.Sort(ops)
	for _, op := range ops {
		a.writeTop(bw, all, "Top stacks of "+op+" by time", WeightLatency, n, func(s *Sample) bool { return s.Op == op })
	}
	return bw.Flush()
}

func weightName(by Weight) string {
	switch by {
	case WeightBytes:
		return "bytes"
	case WeightLatency:
		return "time"
	}
	return "count"
}

func (a *Aggregator) writeTop(bw *bufio.Writer, all []Sample, title string, by Weight, n int, keep func(*Sample) bool) {
	top := Top(all, by, n, keep)
	if len(top) == 0 {
		return
	}
	var total int64
	for i := range all {
		if keep(&all[i]) {
			total += all[i].value(by)
		}
	}
	fmt.Fprintf(bw, "\n  %s\n", title)
	for _, s := range top {
		v := s.value(by)
		var vs string
		switch by {
		case WeightLatency:
			vs = time.Duration(v).String()
		case WeightBytes:
			vs = strconv.FormatInt(v, 10) + " B"
		default:
			vs = strconv.FormatInt(v, 10)
		}
		fmt.Fprintf(bw, "  %12s %5.1f%%  %d events, %d B, %s  %s %s\n", vs, 100*float64(v)/float64(total),
			s.Count, s.Bytes, time.Duration(s.Latency), s.Op, termesc.Append(nil, s.Comm))
		for _, f := range s.Frames {
			bw.WriteString("        ")
			bw.Write(termesc.Append(nil, stacks.FrameString(f)))
			bw.WriteByte('\n')
		}
	}
}

// isBlock reports whether op is a block I/O op.
func isBlock(op event.Op) bool { return op.Layer() == event.LayerBlock }
