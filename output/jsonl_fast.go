package output

import (
	"encoding/base64"
	"encoding/binary"
	"unicode/utf8"

	"github.com/iotrace/iotrace/event"
)

// eventDecoder decodes the event lines of iotrace's own jsonl (the fixed
// schema [JSONL.Event] writes, docs/events.md) in one pass over the line:
// keys are matched by a switch on their bytes, numbers and strings are
// parsed in place, short strings are interned, and enum names (source,
// layer, op, status, flags, dev) are looked up in small per-reader caches
// filled by the same parse functions the generic path uses. It is written
// by hand because events are the hot path of reading jsonl back and a
// general JSON decoder (go-json, see unmarshalLine) spends most of its time
// on generality this schema does not need.
//
// It never rejects a line: it decodes the line or declines it. Anything
// outside the plain form — a key with an escape, an upper-case or non-ASCII
// letter, a repeated key, a null, a number with a fraction, exponent,
// leading zero or out of range, a string with a lone surrogate or bytes that
// are not UTF-8, a key that belongs to another object type, a bad value of
// any kind — makes it decline, and the reader decodes the line with the
// generic path, which accepts it or names what is wrong. Fact lines get
// the same treatment (eventDecoder.fact, jsonl_fact_fast.go); header and
// trailer lines (one each per trace) always take the generic path. So the
// fast path can only change speed: FuzzJSONLEventLine and
// FuzzJSONLFactLine check that whatever it accepts, the generic path
// accepts with the identical event or fact.
type eventDecoder struct {
	strs     map[string]string
	slots    [internSlots]string // direct-mapped in front of strs
	sources  enumCache[event.Source]
	layers   enumCache[event.Layer]
	ops      enumCache[event.Op]
	statuses enumCache[event.Status]
	flags    enumCache[event.Flags]
	devs     enumCache[event.Device]
	scratch  []byte // unescaped strings
	b64      []byte // decoded KEY_b64 bytes
}

const (
	maxInterned    = 1 << 14 // strings kept before the cache is emptied
	maxInternedLen = 256     // longer strings are not interned
	maxEnumCache   = 256     // enum spellings kept per cache
	maxSkipDepth   = 64      // nesting of an unknown value before declining
	internBits     = 12      // log2 of the direct-mapped intern slots
	internSlots    = 1 << internBits
	enumBits       = 6
	enumSlots      = 1 << enumBits
)

// enumCache maps the spellings of an enum's values to the values: a
// direct-mapped table (a hit costs a cheap hash and one comparison) in
// front of a map of every spelling parsed so far.
type enumCache[T any] struct {
	m    map[string]T
	keys [enumSlots]string
	vals [enumSlots]T
	// the empty spelling (an absent field), parsed once
	empty               T
	emptyOK, emptyKnown bool
}

// cheapHash mixes the length and the first and last bytes of v: enough to
// spread the strings of a trace over direct-mapped slots, whose hits are
// confirmed by comparing the whole string.
func cheapHash(v []byte) uint64 {
	n := len(v)
	var a, b uint64
	switch {
	case n >= 8:
		a, b = binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[n-8:])
	case n >= 4:
		a, b = uint64(binary.LittleEndian.Uint32(v)), uint64(binary.LittleEndian.Uint32(v[n-4:]))
	case n > 0:
		a = uint64(v[0]) | uint64(v[n/2])<<8 | uint64(v[n-1])<<16
	}
	return (a ^ (b+uint64(n))*0x9e3779b97f4a7c15) * 0xff51afd7ed558ccd
}

func newEventDecoder() *eventDecoder {
	return &eventDecoder{strs: make(map[string]string, 256)}
}

// Bits of the event keys seen on a line: a repeated key declines.
const (
	kType = iota
	kID
	kSource
	kLayer
	kOp
	kNative
	kNativeB64
	kTime
	kDuration
	kWait
	kCPU
	kPid
	kTid
	kProcStart
	kComm
	kCommB64
	kPath
	kPathB64
	kPath2
	kPath2B64
	kFD
	kFileObject
	kFileKey
	kInode
	kOffset
	kSize
	kBytes
	kStatus
	kCode
	kFlags
	kOpenFlags
	kMode
	kDisposition
	kPriority
	kIOFlags
	kInfo
	kDev
	kSector
	kRequest
	kCause
	kCausedIOs
	kCausedBytes
	kReadCached
	kReadAhead
	kReadDisk
	kReadWaited
	kReadAheadFrom
	kNote
	kNoteB64
	kStack
)

// strClass marks the bytes a string scan stops at: '"', '\\', control
// characters and every byte of a multi-byte UTF-8 sequence.
var strClass = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80
	}
	return
}()

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i // the writer writes no space: the common case, inlined
	}
	return skipSpaceLoop(b, i)
}

//go:noinline
func skipSpaceLoop(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// eventLine is what event gathers from a line besides the event's own
// fields: the keys seen, the raw enum spellings and the KEY_b64 strings.
type eventLine struct {
	seen                        uint64 // bits of the keys seen (k*)
	typed                       bool   // "type":"event" seen
	src, layer, op, status, dev []byte // raw enum strings, nil when absent
	nativeB64, commB64, pathB64 string
	path2B64, noteB64           string
}

// event decodes line into e and reports whether it did; on false e holds
// garbage and the line must be decoded by the generic path. Each member
// is read by memberKey, eventField and memberEnd; the enums are looked up
// at the end (eventEnums).
func (d *eventDecoder) event(b []byte, e *event.Event) bool {
	e.Reset()
	var l eventLine
	i, more := objectOpen(b)
	if !more {
		return false
	}
	for more {
		key, at, ok := memberKey(b, i)
		if !ok {
			return false
		}
		at, bit, ok := d.eventField(b, at, key, e, &l)
		if !ok || !markKey(&l.seen, bit) {
			return false
		}
		if i, more, ok = memberEnd(b, at); !ok {
			return false
		}
	}
	return l.typed && skipSpace(b, i) == len(b) && d.eventEnums(e, &l)
}

// objectOpen returns the index of the first key of the object line b;
// false when b is not an object or has no member (then it has no type).
func objectOpen(b []byte) (int, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	i = skipSpace(b, i+1)
	return i, i >= len(b) || b[i] != '}'
}

// memberKey reads the key at b[i] and the ':' after it, and returns the
// key and the index of its value. A key with an escape, a byte outside
// ASCII or a control character declines.
func memberKey(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	j := i + 1
	for j < len(b) && !strClass[b[j]] {
		j++
	}
	if j >= len(b) || b[j] != '"' {
		return nil, i, false
	}
	key := b[i+1 : j]
	i = skipSpace(b, j+1)
	if i >= len(b) || b[i] != ':' {
		return nil, i, false
	}
	i = skipSpace(b, i+1)
	return key, i, i < len(b)
}

// memberEnd reads what follows a member's value: ',' (more: the index of
// the next key) or the object's '}' (the index after it).
func memberEnd(b []byte, i int) (next int, more, ok bool) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), true, true
	case '}':
		return i + 1, false, true
	}
	return i, false, false
}

// markKey records key bit in seen (bit -1: a key not tracked) and reports
// false for a key seen before.
func markKey(seen *uint64, bit int) bool {
	if bit < 0 {
		return true
	}
	if *seen&(1<<bit) != 0 {
		return false
	}
	*seen |= 1 << bit
	return true
}

// eventField reads the value at b[i] of an event line's key into e (or l)
// and returns the index after it and the key's bit (-1: none).
func (d *eventDecoder) eventField(b []byte, i int, key []byte, e *event.Event, l *eventLine) (int, int, bool) {
	switch string(key) {
	case "type":
		str, i, _, ok := d.str(b, i)
		l.typed = ok && string(str) == "event"
		return i, kType, l.typed
	case "id":
		return idField(b, i, &e.ID, kID)
	case "source":
		return d.rawField(b, i, &l.src, kSource)
	case "layer":
		return d.rawField(b, i, &l.layer, kLayer)
	case "op":
		return d.rawField(b, i, &l.op, kOp)
	case "status":
		return d.rawField(b, i, &l.status, kStatus)
	case "dev":
		return d.rawField(b, i, &l.dev, kDev)
	case "native":
		return d.strField(b, i, &e.Native, kNative)
	case "comm":
		return d.strField(b, i, &e.Comm, kComm)
	case "path":
		return d.strField(b, i, &e.Path, kPath)
	case "path2":
		return d.strField(b, i, &e.Path2, kPath2)
	case "note":
		return d.strField(b, i, &e.Note, kNote)
	case "native_b64":
		return d.b64Field(b, i, &l.nativeB64, kNativeB64)
	case "comm_b64":
		return d.b64Field(b, i, &l.commB64, kCommB64)
	case "path_b64":
		return d.b64Field(b, i, &l.pathB64, kPathB64)
	case "path2_b64":
		return d.b64Field(b, i, &l.path2B64, kPath2B64)
	case "note_b64":
		return d.b64Field(b, i, &l.noteB64, kNoteB64)
	case "time":
		return intField(b, i, &e.Time, kTime)
	case "duration":
		return intField(b, i, &e.Duration, kDuration)
	case "wait":
		return intField(b, i, &e.Wait, kWait)
	case "proc_start":
		return intField(b, i, &e.ProcStart, kProcStart)
	case "offset":
		return intField(b, i, &e.Offset, kOffset)
	case "bytes":
		return intField(b, i, &e.Bytes, kBytes)
	case "fd":
		s, i, ok := parseInt(b, i)
		e.FD = int32(s)
		return i, kFD, ok && s >= -1<<31 && s <= 1<<31-1
	case "cpu":
		return u32Field(b, i, &e.CPU, kCPU)
	case "pid":
		return u32Field(b, i, &e.Pid, kPid)
	case "tid":
		return u32Field(b, i, &e.Tid, kTid)
	case "code":
		return u32Field(b, i, &e.Code, kCode)
	case "open_flags":
		return u32Field(b, i, &e.OpenFlags, kOpenFlags)
	case "mode":
		return u32Field(b, i, &e.Mode, kMode)
	case "io_flags":
		return u32Field(b, i, &e.IOFlags, kIOFlags)
	case "info":
		return u32Field(b, i, &e.Info, kInfo)
	case "caused_ios":
		return u32Field(b, i, &e.CausedIOs, kCausedIOs)
	case "disposition":
		return u8Field(b, i, &e.Disposition, kDisposition)
	case "priority":
		return u8Field(b, i, &e.Priority, kPriority)
	case "inode":
		return uintField(b, i, &e.Inode, kInode)
	case "size":
		return uintField(b, i, &e.Size, kSize)
	case "sector":
		return uintField(b, i, &e.Sector, kSector)
	case "caused_bytes":
		return uintField(b, i, &e.CausedBytes, kCausedBytes)
	case "read_cached":
		return uintField(b, i, &e.ReadCached, kReadCached)
	case "read_ahead":
		return uintField(b, i, &e.ReadAhead, kReadAhead)
	case "read_disk":
		return uintField(b, i, &e.ReadDisk, kReadDisk)
	case "read_waited":
		return uintField(b, i, &e.ReadWaited, kReadWaited)
	case "read_ahead_from":
		return idField(b, i, &e.ReadAheadFrom, kReadAheadFrom)
	case "stack":
		return uintField(b, i, &e.Stack, kStack)
	case "cause":
		return idField(b, i, &e.Cause, kCause)
	case "file_object":
		return hexField(b, i, &e.FileObject, kFileObject)
	case "file_key":
		return hexField(b, i, &e.FileKey, kFileKey)
	case "request":
		return hexField(b, i, &e.Request, kRequest)
	case "flags":
		fl, i, ok := d.flagList(b, i)
		e.Flags = fl
		return i, kFlags, ok
	case "os", "os_version", "hostname", "hostname_b64", "cpus", "pointer_size",
		"start_wall", "clock", "clock_freq", "clock_origin", "command", "command_b64",
		"tool", "kind", "rundown", "ended", "space", "ppid", "handle", "name",
		"name_b64", "image", "image_b64", "detail", "detail_b64", "end", "counters",
		"file_offset", "vaddr", "kernel", "user":
		return i, -1, false // a field of another object type: the generic path checks it
	}
	return unknownField(b, i, key)
}

// unknownField passes over the value of a key no object type has; a key
// with an upper-case letter declines (go-json may match it to a field
// case-insensitively).
func unknownField(b []byte, i int, key []byte) (int, int, bool) {
	for _, c := range key {
		if 'A' <= c && c <= 'Z' {
			return i, -1, false
		}
	}
	i, ok := skipValue(b, i, 0)
	return i, -1, ok
}

// eventEnums looks up the enum fields of the event (absent ones are "",
// as in the generic path) and puts in the KEY_b64 strings.
func (d *eventDecoder) eventEnums(e *event.Event, l *eventLine) bool {
	var ok bool
	if e.Source, ok = d.source(l.src); !ok {
		return false
	}
	if e.Layer, ok = d.layer(l.layer); !ok {
		return false
	}
	if e.Op, ok = d.op(l.op); !ok {
		return false
	}
	if e.Status, ok = d.status(l.status); !ok {
		return false
	}
	if e.Dev, ok = d.dev(l.dev); !ok {
		return false
	}
	for _, f := range [...]struct {
		dst *string
		b64 string
	}{{&e.Native, l.nativeB64}, {&e.Comm, l.commB64}, {&e.Path, l.pathB64}, {&e.Path2, l.path2B64}, {&e.Note, l.noteB64}} {
		if f.b64 != "" {
			*f.dst = f.b64
		}
	}
	return true
}

// Field readers: each reads a value into dst and returns the index after
// it, the key's bit and whether the value was in the plain form.

func intField(b []byte, i int, dst *int64, bit int) (int, int, bool) {
	v, i, ok := parseInt(b, i)
	*dst = v
	return i, bit, ok
}

func uintField(b []byte, i int, dst *uint64, bit int) (int, int, bool) {
	v, i, ok := parseUint(b, i)
	*dst = v
	return i, bit, ok
}

func u32Field(b []byte, i int, dst *uint32, bit int) (int, int, bool) {
	v, i, ok := parseUint(b, i)
	*dst = uint32(v)
	return i, bit, ok && v <= 1<<32-1
}

func u8Field(b []byte, i int, dst *uint8, bit int) (int, int, bool) {
	v, i, ok := parseUint(b, i)
	*dst = uint8(v)
	return i, bit, ok && v <= 255
}

func idField(b []byte, i int, dst *uint64, bit int) (int, int, bool) {
	v, i, ok := parseID(b, i)
	*dst = v
	return i, bit, ok
}

func hexField(b []byte, i int, dst *uint64, bit int) (int, int, bool) {
	v, i, ok := parseHexNum(b, i)
	*dst = v
	return i, bit, ok
}

func (d *eventDecoder) strField(b []byte, i int, dst *string, bit int) (int, int, bool) {
	v, i, ok := d.strValue(b, i)
	*dst = v
	return i, bit, ok
}

func (d *eventDecoder) rawField(b []byte, i int, dst *[]byte, bit int) (int, int, bool) {
	v, i, ok := d.strKeep(b, i)
	*dst = v
	return i, bit, ok
}

func (d *eventDecoder) b64Field(b []byte, i int, dst *string, bit int) (int, int, bool) {
	v, i, ok := d.b64Value(b, i)
	*dst = v
	return i, bit, ok
}

// str reads the JSON string at b[i] (scanString into d.scratch).
func (d *eventDecoder) str(b []byte, i int) (v []byte, next int, esc, ok bool) {
	return scanString(&d.scratch, b, i)
}

// scanString reads the JSON string at b[i]. Without escapes or non-ASCII
// bytes the result is a slice of b; else it is unescaped into *scratch
// (valid until the next call) and esc is true. Control characters, bytes
// that are not UTF-8, bad escapes and lone surrogates decline.
func scanString(scratch *[]byte, b []byte, i int) (v []byte, next int, esc, ok bool) {
	if b[i] != '"' {
		return nil, i, false, false
	}
	i++
	j := i
	for j < len(b) && !strClass[b[j]] {
		j++
	}
	if j < len(b) && b[j] == '"' {
		return b[i:j], j + 1, false, true
	}
	out := append((*scratch)[:0], b[i:j]...)
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			*scratch = out
			return out, j + 1, true, true
		case c < 0x20:
			return nil, j, false, false
		case c == '\\':
			if j+1 >= len(b) {
				return nil, j, false, false
			}
			switch b[j+1] {
			case '"', '\\', '/':
				out = append(out, b[j+1])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(b, j+2)
				if !ok {
					return nil, j, false, false
				}
				j += 6
				if 0xd800 <= r && r < 0xdc00 {
					// a high surrogate must be followed by a low one
					if j+1 >= len(b) || b[j] != '\\' || b[j+1] != 'u' {
						return nil, j, false, false
					}
					lo, ok := hex4(b, j+2)
					if !ok || lo < 0xdc00 || lo >= 0xe000 {
						return nil, j, false, false
					}
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					j += 6
				} else if 0xdc00 <= r && r < 0xe000 {
					return nil, j, false, false
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return nil, j, false, false
			}
			j += 2
		case c >= 0x80:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				return nil, j, false, false
			}
			out = append(out, b[j:j+size]...)
			j += size
		default:
			k := j + 1
			for k < len(b) && !strClass[b[k]] {
				k++
			}
			out = append(out, b[j:k]...)
			j = k
		}
	}
	return nil, j, false, false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// strKeep is str with a result that stays valid for the whole line.
func (d *eventDecoder) strKeep(b []byte, i int) ([]byte, int, bool) {
	v, i, esc, ok := d.str(b, i)
	if esc {
		v = append([]byte(nil), v...)
	}
	return v, i, ok
}

// strValue reads a string field's value, interned when short.
func (d *eventDecoder) strValue(b []byte, i int) (string, int, bool) {
	v, i, _, ok := d.str(b, i)
	if !ok {
		return "", i, false
	}
	return d.intern(v), i, true
}

func (d *eventDecoder) intern(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	if len(v) > maxInternedLen {
		return string(v)
	}
	slot := &d.slots[cheapHash(v)>>(64-internBits)]
	if *slot == string(v) {
		return *slot
	}
	s, ok := d.strs[string(v)]
	if !ok {
		if len(d.strs) >= maxInterned {
			clear(d.strs)
		}
		s = string(v)
		d.strs[s] = s
	}
	*slot = s
	return s
}

// b64Value reads a KEY_b64 field: the exact bytes of a string that is not
// UTF-8, in standard base64 ("" when the field is empty, as the generic
// path treats it).
func (d *eventDecoder) b64Value(b []byte, i int) (string, int, bool) {
	v, i, _, ok := d.str(b, i)
	if !ok {
		return "", i, false
	}
	if len(v) == 0 {
		return "", i, true
	}
	out, err := base64.StdEncoding.AppendDecode(d.b64[:0], v)
	if err != nil {
		return "", i, false
	}
	d.b64 = out
	return string(out), i, true
}

// parseUint reads a JSON number that is a uint64 without fraction,
// exponent or leading zero; what follows is left to the caller.
func parseUint(b []byte, i int) (uint64, int, bool) {
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return 0, i, false
	}
	if b[i] == '0' {
		if i+1 < len(b) && '0' <= b[i+1] && b[i+1] <= '9' {
			return 0, i, false
		}
		return 0, i + 1, true
	}
	// 19 digits cannot overflow; a 20th is checked.
	var n uint64
	end := min(len(b), i+19)
	for ; i < end; i++ {
		c := b[i] - '0'
		if c > 9 {
			return n, i, true
		}
		n = n*10 + uint64(c)
	}
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		c := uint64(b[i] - '0')
		if n > (1<<64-1-c)/10 {
			return 0, i, false
		}
		n = n*10 + c
	}
	return n, i, true
}

// parseInt reads a JSON number that is an int64 (not "-0").
func parseInt(b []byte, i int) (int64, int, bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	n, i, ok := parseUint(b, i)
	switch {
	case !ok:
		return 0, i, false
	case neg && n == 0:
		return 0, i, false
	case neg && n <= 1<<63:
		return -int64(n), i, true
	case !neg && n <= 1<<63-1:
		return int64(n), i, true
	}
	return 0, i, false
}

// parseID reads an event ID: a JSON number, or (from 2^53 on, see
// jsonObj.id) its decimal digits in a string.
func parseID(b []byte, i int) (uint64, int, bool) {
	if b[i] != '"' {
		return parseUint(b, i)
	}
	n, j, ok := parseUint(b, i+1)
	if !ok || j >= len(b) || b[j] != '"' {
		return 0, i, false
	}
	return n, j + 1, true
}

// parseHexNum reads a kernel address: a JSON number or "0x" and 1 to 16
// hex digits in a string (what the writer's hexNZ writes).
func parseHexNum(b []byte, i int) (uint64, int, bool) {
	if b[i] != '"' {
		return parseUint(b, i)
	}
	if i+3 >= len(b) || b[i+1] != '0' || b[i+2] != 'x' {
		return 0, i, false
	}
	i += 3
	var n uint64
	digits := 0
	for ; i < len(b) && b[i] != '"'; i++ {
		c := b[i]
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, i, false
		}
		if digits++; digits > 16 {
			return 0, i, false
		}
		n = n<<4 | uint64(v)
	}
	if digits == 0 || i >= len(b) {
		return 0, i, false
	}
	return n, i + 1, true
}

// flagList reads the "flags" array of flag names.
func (d *eventDecoder) flagList(b []byte, i int) (event.Flags, int, bool) {
	if b[i] != '[' {
		return 0, i, false
	}
	i = skipSpace(b, i+1)
	var fl event.Flags
	if i < len(b) && b[i] == ']' {
		return 0, i + 1, true
	}
	for i < len(b) {
		if b[i] != '"' {
			return 0, i, false
		}
		v, j, _, ok := d.str(b, i)
		if !ok {
			return 0, j, false
		}
		bit, ok := lookup(&d.flags, v, func(s string) (event.Flags, bool) { return parseFlag(s) })
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

// skipValue passes over one JSON value of a key the decoder does not know,
// checking its grammar strictly.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > maxSkipDepth {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		var scratch []byte
		_, i, _, ok := scanString(&scratch, b, i)
		return i, ok
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == end {
			return i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				if i, ok = skipValue(b, i, depth+1); !ok {
					return i, false
				}
				i = skipSpace(b, i)
				if i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipSpace(b, i+1)
			}
			if i, ok = skipValue(b, i, depth+1); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == end {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
	case c == '-' || ('0' <= c && c <= '9'):
		return skipNumber(b, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return i, false
}

// skipNumber passes over a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	if b[i] == '0' {
		i++
	} else {
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	if i < len(b) && b[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// lookup finds v in the cache c, or parses it and remembers the result.
func lookup[T any](c *enumCache[T], v []byte, parse func(string) (T, bool)) (T, bool) {
	if len(v) == 0 {
		if !c.emptyKnown {
			c.empty, c.emptyOK = parse("")
			c.emptyKnown = true
		}
		return c.empty, c.emptyOK
	}
	h := cheapHash(v) >> (64 - enumBits)
	if c.keys[h] == string(v) {
		return c.vals[h], true
	}
	x, ok := c.m[string(v)]
	if !ok {
		if x, ok = parse(string(v)); !ok {
			return x, false
		}
		if c.m == nil {
			c.m = make(map[string]T)
		}
		if len(c.m) < maxEnumCache {
			c.m[string(v)] = x
		}
	}
	c.keys[h], c.vals[h] = string(v), x
	return x, true
}

func okOf[T any](x T, err error) (T, bool) { return x, err == nil }

func (d *eventDecoder) source(v []byte) (event.Source, bool) {
	return lookup(&d.sources, v, func(s string) (event.Source, bool) { return okOf(event.ParseSource(s)) })
}

func (d *eventDecoder) layer(v []byte) (event.Layer, bool) {
	return lookup(&d.layers, v, func(s string) (event.Layer, bool) {
		l, err := event.ParseLayer(s)
		if err != nil && s == "unknown" {
			return event.LayerUnknown, true
		}
		return l, err == nil
	})
}

func (d *eventDecoder) op(v []byte) (event.Op, bool) {
	return lookup(&d.ops, v, func(s string) (event.Op, bool) { return okOf(event.ParseOp(s)) })
}

func (d *eventDecoder) status(v []byte) (event.Status, bool) {
	return lookup(&d.statuses, v, func(s string) (event.Status, bool) { return okOf(event.ParseStatus(s)) })
}

func (d *eventDecoder) dev(v []byte) (event.Device, bool) {
	return lookup(&d.devs, v, func(s string) (event.Device, bool) { return okOf(parseDevice(s)) })
}
