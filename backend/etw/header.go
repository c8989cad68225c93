package etw

import (
	"fmt"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// traceHeader is what the pipeline knows of the trace's start: the header
// it begins the sink with and the clock of its records' timestamps.
type traceHeader struct {
	header    event.Header
	clock     event.Clock
	qpcFreq   uint64 // converts DiskIo response times (ticks)
	logHdr    *kernel.LogfileHeader
	begun     bool // the sink has the header
	noHeader  bool // the stream did not start with an EventTrace header
	originSet bool // OriginAtFirstRecord was applied
}

// headerless reports whether the pipeline has no header yet: none given
// (Options.Header), no EventTrace header record, and no record taken as
// time 0 for want of one.
func (p *Pipeline) headerless() bool {
	return p.opts.Header == nil && p.hdr.logHdr == nil && !p.hdr.noHeader
}

// SetClockFreq sets the frequency of the header's clock before the first
// record: a live session learns its CPU speed when it opens.
func (p *Pipeline) SetClockFreq(freq uint64) {
	p.hdr.header.Clock.Freq = freq
	p.hdr.clock.Freq = freq
}

// onHeader takes the trace's clock and machine from the EventTrace header
// record and begins the trace.
func (p *Pipeline) onHeader(r *record.Record, h *kernel.LogfileHeader) error {
	if p.hdr.logHdr == nil { // a merged file may hold more than one header
		p.hdr.logHdr = h
		if p.hdr.qpcFreq == 0 {
			p.hdr.qpcFreq = h.PerfFreq
		}
		if p.opts.Header == nil && !p.hdr.begun {
			p.hdr.header = HeaderFromLogfile(h, r.Timestamp, p.opts.Source)
			p.hdr.clock = p.hdr.header.Clock
		}
	}
	return p.beginIfReady(r)
}

// HeaderFromLogfile builds the trace header from a TRACE_LOGFILE_HEADER
// and the timestamp of the record that carried it (time 0).
func HeaderFromLogfile(h *kernel.LogfileHeader, origin int64, src event.Source) event.Header {
	hd := event.Header{
		Source:      src,
		OS:          "windows",
		OSVersion:   h.OSVersion(),
		CPUs:        h.NumberOfProcessors,
		PointerSize: uint8(h.PointerSize),
		StartWall:   FiletimeToUnixNano(h.StartTime),
	}
	switch h.ClockType {
	case 2:
		hd.Clock = event.Clock{Kind: event.ClockFiletime, Freq: 10_000_000, Origin: origin}
	case 3:
		hd.Clock = event.Clock{Kind: event.ClockCycles, Freq: uint64(h.CPUSpeedMHz) * 1_000_000, Origin: origin}
	default:
		hd.Clock = event.Clock{Kind: event.ClockQPC, Freq: h.PerfFreq, Origin: origin}
	}
	if h.SessionName != "" {
		hd.Tool = "ETW session " + h.SessionName
	} else {
		hd.Tool = "ETW"
	}
	return hd
}

// FiletimeToUnixNano converts a FILETIME (100 ns since 1601) to
// nanoseconds since the Unix epoch.
func FiletimeToUnixNano(ft int64) int64 {
	const epochDiff = 116444736000000000
	if ft <= 0 {
		return 0
	}
	return (ft - epochDiff) * 100
}

// beginIfReady begins the trace once the pipeline has a header: from the
// options, from an EventTrace header record, or (when the stream starts
// with something else) from the first record itself, so that nothing is
// dropped for want of a header.
func (p *Pipeline) beginIfReady(r *record.Record) error {
	if p.opts.OriginAtFirstRecord != nil && !p.hdr.begun && !p.hdr.originSet {
		p.hdr.originSet = true
		p.hdr.header.Clock.Origin = r.Timestamp
		p.hdr.header.StartWall = p.opts.OriginAtFirstRecord()
		p.hdr.clock = p.hdr.header.Clock
	}
	if p.headerless() {
		// No header record first: take the record's own timestamp as
		// time 0 (counted, see stats).
		p.hdr.noHeader = true
		p.hdr.header = event.Header{Source: p.opts.Source, OS: "windows", Tool: "ETW",
			Clock: event.Clock{Kind: event.ClockQPC, Freq: p.hdr.qpcFreq, Origin: r.Timestamp}}
		if p.hdr.qpcFreq == 0 {
			p.hdr.header.Clock.Freq = 10_000_000
		}
		p.hdr.clock = p.hdr.header.Clock
	}
	if p.hdr.begun || p.mode == modeCollect {
		return nil
	}
	p.hdr.begun = true
	if err := p.sink.Begin(&p.hdr.header); err != nil {
		p.err = fmt.Errorf("sink: begin: %w", err)
		return p.err
	}
	return nil
}

// ticks converts QPC ticks to nanoseconds.
func (p *Pipeline) ticks(n uint64) int64 {
	if p.hdr.qpcFreq == 0 {
		return 0
	}
	return event.Clock{Kind: event.ClockQPC, Freq: p.hdr.qpcFreq}.ToNanos(int64(n))
}
