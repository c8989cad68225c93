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

// fact decodes a fact line into f as eventDecoder.event decodes event
// lines: in one pass, declining anything outside the plain form (see
// eventDecoder) and any key of jsonRecord that is not a fact's, so that
// what it accepts the generic path accepts with the identical fact
// (FuzzJSONLFactLine). Facts are a fifth of the lines of a busy trace and
// the fact pre-pass of input reads them too.
func (d *eventDecoder) fact(b []byte, f *event.Fact) bool {
	*f = event.Fact{}
	var (
		seen                      uint64
		typed                     bool
		kind, space, dev          []byte
		nameB64, imageB64, detB64 string
		str                       []byte
		ok                        bool
		n                         uint64
		kernel, user              []uint64
	)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return false
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		j := i + 1
		for j < len(b) && !strClass[b[j]] {
			j++
		}
		if j >= len(b) || b[j] != '"' {
			return false // escape, non-ASCII or control character in a key
		}
		key := b[i+1 : j]
		i = skipSpace(b, j+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return false
		}
		bit := -1
		switch string(key) {
		case "type":
			bit = fType
			if str, i, _, ok = d.str(b, i); !ok || string(str) != "fact" {
				return false
			}
			typed = true
		case "kind":
			bit = fKind
			if kind, i, ok = d.strKeep(b, i); !ok {
				return false
			}
		case "space":
			bit = fSpace
			if space, i, ok = d.strKeep(b, i); !ok {
				return false
			}
		case "dev":
			bit = fDev
			if dev, i, ok = d.strKeep(b, i); !ok {
				return false
			}
		case "time":
			bit = fTime
			if f.Time, i, ok = parseInt(b, i); !ok {
				return false
			}
		case "proc_start":
			bit = fProcStart
			if f.ProcStart, i, ok = parseInt(b, i); !ok {
				return false
			}
		case "rundown":
			bit = fRundown
			if f.Rundown, i, ok = parseBool(b, i); !ok {
				return false
			}
		case "ended":
			bit = fEnded
			if f.End, i, ok = parseBool(b, i); !ok {
				return false
			}
		case "pid", "tid", "ppid":
			if n, i, ok = parseUint(b, i); !ok || n > 1<<32-1 {
				return false
			}
			switch string(key) {
			case "pid":
				bit, f.Pid = fPid, uint32(n)
			case "tid":
				bit, f.Tid = fTid, uint32(n)
			default:
				bit, f.PPid = fPPid, uint32(n)
			}
		case "size":
			bit = fSize
			if f.Size, i, ok = parseUint(b, i); !ok {
				return false
			}
		case "handle":
			bit = fHandle
			if f.Handle, i, ok = parseHexNum(b, i); !ok {
				return false
			}
		case "file_offset":
			bit = fFileOffset
			if f.Offset, i, ok = parseHexNum(b, i); !ok {
				return false
			}
		case "vaddr":
			bit = fVaddr
			if f.Vaddr, i, ok = parseHexNum(b, i); !ok {
				return false
			}
		case "name":
			bit = fName
			if f.Name, i, ok = d.strValue(b, i); !ok {
				return false
			}
		case "image":
			bit = fImage
			if f.Image, i, ok = d.strValue(b, i); !ok {
				return false
			}
		case "detail":
			bit = fDetail
			if f.Detail, i, ok = d.strValue(b, i); !ok {
				return false
			}
		case "name_b64":
			bit = fNameB64
			if nameB64, i, ok = d.b64Value(b, i); !ok {
				return false
			}
		case "image_b64":
			bit = fImageB64
			if imageB64, i, ok = d.b64Value(b, i); !ok {
				return false
			}
		case "detail_b64":
			bit = fDetailB64
			if detB64, i, ok = d.b64Value(b, i); !ok {
				return false
			}
		case "flags":
			bit = fFlags
			if f.Flags, i, ok = d.factFlagList(b, i); !ok {
				return false
			}
		case "kernel":
			bit = fKernel
			if kernel, i, ok = parseAddrList(b, i); !ok {
				return false
			}
		case "user":
			bit = fUser
			if user, i, ok = parseAddrList(b, i); !ok {
				return false
			}
		default:
			if recordKeys()[string(key)] {
				return false // a field of another object type: the generic path checks it
			}
			for _, c := range key {
				if 'A' <= c && c <= 'Z' {
					return false // may match a field case-insensitively
				}
			}
			if i, ok = skipValue(b, i, 0); !ok {
				return false
			}
		}
		if bit >= 0 {
			if seen&(1<<bit) != 0 {
				return false
			}
			seen |= 1 << bit
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			i++
			break
		}
		if b[i] != ',' {
			return false
		}
		i = skipSpace(b, i+1)
	}
	if !typed || skipSpace(b, i) != len(b) {
		return false
	}
	names := factNames()
	if f.Kind, ok = names.kinds[string(kind)]; !ok {
		return false
	}
	if len(space) > 0 {
		if f.Space, ok = names.spaces[string(space)]; !ok {
			return false
		}
	}
	if f.Dev, ok = d.dev(dev); !ok {
		return false
	}
	if nameB64 != "" {
		f.Name = nameB64
	}
	if imageB64 != "" {
		f.Image = imageB64
	}
	if detB64 != "" {
		f.Detail = detB64
	}
	f.Kernel, f.User = kernel, user
	return true
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
