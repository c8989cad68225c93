package output

import (
	"reflect"
	"strings"
	"sync"

	"github.com/iotrace/iotrace/event"
)

// factLinePrefix is how the writer begins every fact line: only such lines
// are offered to the fast fact decoder.
var factLinePrefix = []byte(`{"type":"fact"`)

// Bits of the fact keys seen on a line: a repeated key declines.
const (
	fType = iota
	fKind
	fTime
	fRundown
	fEnded
	fSpace
	fPid
	fProcStart
	fTid
	fPPid
	fHandle
	fDev
	fName
	fNameB64
	fImage
	fImageB64
	fDetail
	fDetailB64
	fSize
	fFileOffset
	fVaddr
	fFlags
	fKernel
	fUser
)

// recordKeys are the JSON names of every field of jsonRecord: a fact line
// with one that is not a fact's declines, for go-json to check its value.
var recordKeys = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[jsonRecord]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
})

// factLine is what fact gathers from a line besides the fact's own
// fields.
type factLine struct {
	seen                      uint64 // bits of the keys seen (f*)
	typed                     bool   // "type":"fact" seen
	kind, space, dev          []byte // raw enum strings, nil when absent
	nameB64, imageB64, detB64 string
	kernel, user              []uint64
}

// fact decodes a fact line into f as eventDecoder.event decodes event
// lines: in one pass, declining anything outside the plain form (see
// eventDecoder) and any key of jsonRecord that is not a fact's, so that
// what it accepts the generic path accepts with the identical fact
// (FuzzJSONLFactLine). Facts are a fifth of the lines of a busy trace and
// the fact pre-pass of input reads them too.
func (d *eventDecoder) fact(b []byte, f *event.Fact) bool {
	*f = event.Fact{}
	var l factLine
	i, more := objectOpen(b)
	if !more {
		return false
	}
	for more {
		key, at, ok := memberKey(b, i)
		if !ok {
			return false
		}
		at, bit, ok := d.factField(b, at, key, f, &l)
		if !ok || !markKey(&l.seen, bit) {
			return false
		}
		if i, more, ok = memberEnd(b, at); !ok {
			return false
		}
	}
	return l.typed && skipSpace(b, i) == len(b) && d.factEnums(f, &l)
}

// factField reads the value at b[i] of a fact line's key into f (or l)
// and returns the index after it and the key's bit (-1: none).
func (d *eventDecoder) factField(b []byte, i int, key []byte, f *event.Fact, l *factLine) (int, int, bool) {
	switch string(key) {
	case "type":
		str, i, _, ok := d.str(b, i)
		l.typed = ok && string(str) == "fact"
		return i, fType, l.typed
	case "kind":
		return d.rawField(b, i, &l.kind, fKind)
	case "space":
		return d.rawField(b, i, &l.space, fSpace)
	case "dev":
		return d.rawField(b, i, &l.dev, fDev)
	case "time":
		return intField(b, i, &f.Time, fTime)
	case "proc_start":
		return intField(b, i, &f.ProcStart, fProcStart)
	case "rundown":
		return boolField(b, i, &f.Rundown, fRundown)
	case "ended":
		return boolField(b, i, &f.End, fEnded)
	case "pid":
		return u32Field(b, i, &f.Pid, fPid)
	case "tid":
		return u32Field(b, i, &f.Tid, fTid)
	case "ppid":
		return u32Field(b, i, &f.PPid, fPPid)
	case "size":
		return uintField(b, i, &f.Size, fSize)
	case "handle":
		return hexField(b, i, &f.Handle, fHandle)
	case "file_offset":
		return hexField(b, i, &f.Offset, fFileOffset)
	case "vaddr":
		return hexField(b, i, &f.Vaddr, fVaddr)
	case "name":
		return d.strField(b, i, &f.Name, fName)
	case "image":
		return d.strField(b, i, &f.Image, fImage)
	case "detail":
		return d.strField(b, i, &f.Detail, fDetail)
	case "name_b64":
		return d.b64Field(b, i, &l.nameB64, fNameB64)
	case "image_b64":
		return d.b64Field(b, i, &l.imageB64, fImageB64)
	case "detail_b64":
		return d.b64Field(b, i, &l.detB64, fDetailB64)
	case "flags":
		fl, i, ok := d.factFlagList(b, i)
		f.Flags = fl
		return i, fFlags, ok
	case "kernel":
		return addrField(b, i, &l.kernel, fKernel)
	case "user":
		return addrField(b, i, &l.user, fUser)
	}
	if recordKeys()[string(key)] {
		return i, -1, false // a field of another object type: the generic path checks it
	}
	return unknownField(b, i, key)
}

// factEnums looks up the enum fields of the fact and puts in the KEY_b64
// strings and the stacks.
func (d *eventDecoder) factEnums(f *event.Fact, l *factLine) bool {
	names := factNames()
	var ok bool
	if f.Kind, ok = names.kinds[string(l.kind)]; !ok {
		return false
	}
	if len(l.space) > 0 {
		if f.Space, ok = names.spaces[string(l.space)]; !ok {
			return false
		}
	}
	if f.Dev, ok = d.dev(l.dev); !ok {
		return false
	}
	if l.nameB64 != "" {
		f.Name = l.nameB64
	}
	if l.imageB64 != "" {
		f.Image = l.imageB64
	}
	if l.detB64 != "" {
		f.Detail = l.detB64
	}
	f.Kernel, f.User = l.kernel, l.user
	return true
}

func boolField(b []byte, i int, dst *bool, bit int) (int, int, bool) {
	v, i, ok := parseBool(b, i)
	*dst = v
	return i, bit, ok
}

func addrField(b []byte, i int, dst *[]uint64, bit int) (int, int, bool) {
	v, i, ok := parseAddrList(b, i)
	*dst = v
	return i, bit, ok
}

// parseBool reads true or false.
func parseBool(b []byte, i int) (bool, int, bool) {
	switch {
	case len(b)-i >= 4 && string(b[i:i+4]) == "true":
		return true, i + 4, true
	case len(b)-i >= 5 && string(b[i:i+5]) == "false":
		return false, i + 5, true
	}
	return false, i, false
}

// factFlagList reads the "flags" array of fact flag names.
func (d *eventDecoder) factFlagList(b []byte, i int) (event.FactFlags, int, bool) {
	if b[i] != '[' {
		return 0, i, false
	}
	i = skipSpace(b, i+1)
	var fl event.FactFlags
	if i < len(b) && b[i] == ']' {
		return 0, i + 1, true
	}
	for i < len(b) {
		v, j, _, ok := d.str(b, i)
		if !ok {
			return 0, j, false
		}
		bit, ok := event.ParseFactFlag(string(v))
		if !ok {
			return 0, j, false
		}
		fl |= bit
		i = skipSpace(b, j)
		if i >= len(b) {
			break
		}
		if b[i] == ']' {
			return fl, i + 1, true
		}
		if b[i] != ',' {
			return 0, i, false
		}
		i = skipSpace(b, i+1)
	}
	return 0, i, false
}

// parseAddrList reads an array of addresses (JSON numbers or "0x..."
// strings); an empty array is nil, as addrList makes it.
func parseAddrList(b []byte, i int) ([]uint64, int, bool) {
	if b[i] != '[' {
		return nil, i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil, i + 1, true
	}
	var out []uint64
	for i < len(b) {
		v, j, ok := parseHexNum(b, i)
		if !ok {
			return nil, j, false
		}
		out = append(out, v)
		i = skipSpace(b, j)
		if i >= len(b) {
			break
		}
		if b[i] == ']' {
			return out, i + 1, true
		}
		if b[i] != ',' {
			return nil, i, false
		}
		i = skipSpace(b, i+1)
	}
	return nil, i, false
}
