package kernel

import (
	"sync"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// CodeFilter is a set of (class, opcode or event id) pairs, whatever the
// version and pointer size: it lets a pass that needs only some kinds of
// events (the names and processes of a file's first pass) skip every
// other record before any payload decoding, at the cost of ClassOf and
// one bit test. Codes from 256 on never match: every code iotrace decodes
// is below 256. A CodeFilter is immutable once built and safe for
// concurrent use.
type CodeFilter struct {
	bits [numClasses][4]uint64
}

// NewCodeFilter returns the filter of the codes whose decoder keep
// accepts, given the decoder's kind and op (known events that iotrace
// ignores have KindIgnored).
func NewCodeFilter(keep func(kind Kind, op event.Op) bool) *CodeFilter {
	f := &CodeFilter{}
	set := func(c Class, code uint16) {
		if code < 256 {
			f.bits[c][code>>6] |= 1 << (code & 63)
		}
	}
	for pk, s := range defaultTable().exact {
		if keep(s.kind, s.op) {
			set(Class(pk>>40), uint16(pk>>24))
		}
	}
	for ck, s := range defaultTable().ignored {
		if keep(s.kind, s.op) {
			set(ck.class, ck.code)
		}
	}
	return f
}

// Match reports whether r's class and code are in the filter.
func (f *CodeFilter) Match(r *record.Record) bool {
	c := ClassOf(r)
	if c == ClassUnknown {
		return false
	}
	code := CodeOf(r)
	return code < 256 && f.bits[c][code>>6]&(1<<(code&63)) != 0
}

// Has reports whether class c and code are in the filter.
func (f *CodeFilter) Has(c Class, code uint16) bool {
	return c < numClasses && code < 256 && f.bits[c][code>>6]&(1<<(code&63)) != 0
}

// CodeOf returns r's opcode, or its event id for manifest and
// TraceLogging records: the code of its Key.
func CodeOf(r *record.Record) uint16 {
	if r.Kind == record.KindEvent {
		return r.ID
	}
	return uint16(r.Opcode)
}

// anyCode holds every (class, code) some decoder (or ignore rule) knows
// (built on first use, as defaultTable).
var anyCode = sync.OnceValue(func() *CodeFilter { return NewCodeFilter(func(Kind, event.Op) bool { return true }) })

// MayDecode reports whether a decoder may know r. It is false only for
// records Decode certainly counts as unknown (see Decoder.CountUnknown):
// those of no class iotrace decodes, or of a code no decoder of their
// class has, whatever the version. It depends on r's class and code only,
// and is safe for concurrent use.
func MayDecode(r *record.Record) bool {
	return MayDecodeClass(ClassOf(r), r)
}

// MayDecodeClass is MayDecode for a record whose class c (ClassOf) the
// caller has already computed.
func MayDecodeClass(c Class, r *record.Record) bool {
	if c == ClassUnknown {
		return false
	}
	code := CodeOf(r)
	return code >= 256 || anyCode().Has(c, code)
}
