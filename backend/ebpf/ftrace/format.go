package ftrace

import (
	"fmt"
	"strconv"
	"strings"
)

// Field is one field of an event's record, as its format file lists it.
type Field struct {
	Name   string
	Type   string
	Offset int
	Size   int
	Signed bool
}

// Format is an event's record layout (events/SYSTEM/NAME/format).
type Format struct {
	Name   string
	ID     uint16
	Fields []Field
}

// Field returns the field called name.
func (f *Format) Field(name string) (Field, bool) {
	for _, x := range f.Fields {
		if x.Name == name {
			return x, true
		}
	}
	return Field{}, false
}

// ParseFormat parses an event's format file. Every field line must be
// well formed; the print fmt line is ignored.
func ParseFormat(text string) (*Format, error) {
	f := &Format{}
	haveID := false
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "name:"):
			f.Name = strings.TrimSpace(strings.TrimPrefix(line, "name:"))
		case strings.HasPrefix(line, "ID:"):
			id, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "ID:")), 10, 16)
			if err != nil {
				return nil, fmt.Errorf("format line %d: ID: %w", n+1, err)
			}
			f.ID, haveID = uint16(id), true
		case strings.HasPrefix(line, "field:"):
			fd, err := parseField(line)
			if err != nil {
				return nil, fmt.Errorf("format line %d: %w", n+1, err)
			}
			f.Fields = append(f.Fields, fd)
		}
	}
	if !haveID {
		return nil, fmt.Errorf("format of %q has no ID", f.Name)
	}
	return f, nil
}

// parseField parses "field:TYPE NAME[;] offset:N; size:N; signed:N;".
func parseField(line string) (Field, error) {
	var fd Field
	parts := strings.Split(line, ";")
	decl := strings.TrimSpace(strings.TrimPrefix(parts[0], "field:"))
	sp := strings.LastIndexAny(decl, " \t")
	if sp < 0 {
		return fd, fmt.Errorf("field %q: no type", decl)
	}
	fd.Type, fd.Name = strings.TrimSpace(decl[:sp]), decl[sp+1:]
	if i := strings.IndexByte(fd.Name, '['); i >= 0 { // char rwbs[10]
		fd.Name = fd.Name[:i]
	}
	seen := 0
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1<<20 {
			return fd, fmt.Errorf("field %s: %s %q", fd.Name, k, v)
		}
		switch k {
		case "offset":
			fd.Offset, seen = n, seen|1
		case "size":
			fd.Size, seen = n, seen|2
		case "signed":
			fd.Signed = n != 0
		}
	}
	if seen != 3 || fd.Name == "" {
		return fd, fmt.Errorf("field %q: want a name, offset and size", decl)
	}
	return fd, nil
}

// Uint reads the field from a record as an unsigned integer (sizes 1, 2,
// 4, 8, little-endian); ok is false when the record is too short or the
// size is another.
func (fd Field) Uint(rec []byte) (v uint64, ok bool) {
	if fd.Offset+fd.Size > len(rec) {
		return 0, false
	}
	b := rec[fd.Offset : fd.Offset+fd.Size]
	switch fd.Size {
	case 1:
		return uint64(b[0]), true
	case 2:
		return uint64(le.Uint16(b)), true
	case 4:
		return uint64(le.Uint32(b)), true
	case 8:
		return le.Uint64(b), true
	}
	return 0, false
}

// Int reads a signed field (sizes 1, 2, 4, 8).
func (fd Field) Int(rec []byte) (int64, bool) {
	v, ok := fd.Uint(rec)
	if !ok {
		return 0, false
	}
	shift := 64 - 8*uint(fd.Size)
	return int64(v<<shift) >> shift, true
}

// Bytes returns the field's bytes (a char array), or nil.
func (fd Field) Bytes(rec []byte) []byte {
	if fd.Offset+fd.Size > len(rec) {
		return nil
	}
	return rec[fd.Offset : fd.Offset+fd.Size]
}

// PageHeader is where a ring-buffer page keeps its time stamp, its commit
// word (data length and lost-event flags) and its data
// (events/header_page).
type PageHeader struct {
	TimestampOffset, CommitOffset, CommitSize, DataOffset int
}

// ParsePageHeader parses events/header_page.
func ParsePageHeader(text string) (PageHeader, error) {
	f, err := ParseFormat("ID: 0\n" + text)
	if err != nil {
		return PageHeader{}, fmt.Errorf("header_page: %w", err)
	}
	ts, ok1 := f.Field("timestamp")
	commit, ok2 := f.Field("commit")
	data, ok3 := f.Field("data")
	if !ok1 || !ok2 || !ok3 || ts.Size != 8 || (commit.Size != 4 && commit.Size != 8) || data.Offset < ts.Offset+8 || data.Offset < commit.Offset+commit.Size {
		return PageHeader{}, fmt.Errorf("header_page: want a u64 timestamp, a 4- or 8-byte commit and data after them: %+v", f.Fields)
	}
	return PageHeader{TimestampOffset: ts.Offset, CommitOffset: commit.Offset, CommitSize: commit.Size, DataOffset: data.Offset}, nil
}

// StalePid returns the process ID of an instance named PREFIX-PID or
// PREFIX-PID-ANY; ok is false for another name.
func StalePid(name, prefix string) (pid int, ok bool) {
	rest, found := strings.CutPrefix(name, prefix+"-")
	if !found {
		return 0, false
	}
	digits, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(digits)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != digits {
		return 0, false
	}
	return pid, true
}
