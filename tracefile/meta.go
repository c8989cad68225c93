package tracefile

import (
	"fmt"

	"github.com/iotrace/iotrace/event"
)

// The header and trailer chunks are lists of tagged fields: tag, length,
// value. Readers skip tags they do not know, so fields can be added
// without a new format version.

// Header tags.
const (
	hSource = 1 + iota
	hOS
	hOSVersion
	hHostname
	hCPUs
	hPointerSize
	hStartWall
	hClockKind
	hClockFreq
	hClockOrigin
	hCommand
	hTool
	hLayers
)

// Trailer tags.
const (
	tEnd = 1 + iota
	tEvents
	tFacts
	tCounter
	tLayers
)

func appendTagged(b []byte, tag uint64, val []byte) []byte {
	b = appendLEB(b, tag)
	b = appendLEB(b, uint64(len(val)))
	return append(b, val...)
}

func appendTagU(b []byte, tag, v uint64) []byte {
	var buf [10]byte
	return appendTagged(b, tag, appendLEB(buf[:0], v))
}

func appendTagI(b []byte, tag uint64, v int64) []byte { return appendTagU(b, tag, zigzag(v)) }

func appendTagS(b []byte, tag uint64, s string) []byte {
	if s == "" {
		return b
	}
	b = appendLEB(b, tag)
	return appendLEBString(b, s)
}

func appendHeader(b []byte, h *event.Header) []byte {
	b = appendTagU(b, hSource, uint64(h.Source))
	b = appendTagS(b, hOS, h.OS)
	b = appendTagS(b, hOSVersion, h.OSVersion)
	b = appendTagS(b, hHostname, h.Hostname)
	b = appendTagU(b, hCPUs, uint64(h.CPUs))
	b = appendTagU(b, hPointerSize, uint64(h.PointerSize))
	b = appendTagI(b, hStartWall, h.StartWall)
	b = appendTagU(b, hClockKind, uint64(h.Clock.Kind))
	b = appendTagU(b, hClockFreq, h.Clock.Freq)
	b = appendTagI(b, hClockOrigin, h.Clock.Origin)
	b = appendTagS(b, hCommand, h.Command)
	b = appendTagS(b, hTool, h.Tool)
	if h.Layers != 0 {
		b = appendTagU(b, hLayers, uint64(h.Layers))
	}
	return b
}

// fields calls fn for every tagged field of p.
func fields(p []byte, fn func(tag uint64, v *ldec)) error {
	d := ldec{cursor{b: p}}
	for d.left() > 0 && d.err == nil {
		tag := d.uvarint()
		val := d.bytes(d.uvarint())
		if d.err != nil {
			break
		}
		vd := ldec{cursor{b: val}}
		fn(tag, &vd)
		if vd.err != nil {
			return fmt.Errorf("field %d at offset %d: %w", tag, d.off-len(val), vd.err)
		}
	}
	return d.err
}

func parseHeader(p []byte) (event.Header, error) {
	var h event.Header
	err := fields(p, func(tag uint64, v *ldec) {
		switch tag {
		case hSource:
			h.Source = event.Source(v.uvarint())
		case hOS:
			h.OS = string(v.b)
		case hOSVersion:
			h.OSVersion = string(v.b)
		case hHostname:
			h.Hostname = string(v.b)
		case hCPUs:
			h.CPUs = v.u32()
		case hPointerSize:
			h.PointerSize = uint8(v.uvarint())
		case hStartWall:
			h.StartWall = v.varint()
		case hClockKind:
			h.Clock.Kind = event.ClockKind(v.uvarint())
		case hClockFreq:
			h.Clock.Freq = v.uvarint()
		case hClockOrigin:
			h.Clock.Origin = v.varint()
		case hCommand:
			h.Command = string(v.b)
		case hTool:
			h.Tool = string(v.b)
		case hLayers:
			h.Layers = event.Layers(v.uvarint())
		}
	})
	return h, err
}

// trailerRec is the trailer chunk: the trace's trailer and how many events
// and facts the writer wrote.
type trailerRec struct {
	t             event.Trailer
	events, facts uint64
	hasCounts     bool
}

func appendTrailer(b []byte, t *event.Trailer, events, facts uint64) []byte {
	b = appendTagI(b, tEnd, t.End)
	b = appendTagU(b, tEvents, events)
	b = appendTagU(b, tFacts, facts)
	var c []byte
	for _, k := range t.Stats.Counters {
		c = appendLEB(c[:0], uint64(k.Kind))
		c = appendLEB(c, k.Value)
		c = append(c, k.Name...)
		b = appendTagged(b, tCounter, c)
	}
	if t.Layers != 0 {
		b = appendTagU(b, tLayers, uint64(t.Layers))
	}
	return b
}

func parseTrailer(p []byte) (trailerRec, error) {
	var r trailerRec
	var got int
	err := fields(p, func(tag uint64, v *ldec) {
		switch tag {
		case tEnd:
			r.t.End = v.varint()
		case tEvents:
			r.events = v.uvarint()
			got++
		case tFacts:
			r.facts = v.uvarint()
			got++
		case tCounter:
			kind := event.CounterKind(v.uvarint())
			val := v.uvarint()
			name := string(v.b[v.off:])
			if v.err == nil {
				r.t.Stats.Counters = append(r.t.Stats.Counters, event.Counter{Kind: kind, Name: name, Value: val})
			}
		case tLayers:
			r.t.Layers = event.Layers(v.uvarint())
		}
	})
	r.hasCounts = got == 2
	return r, err
}
