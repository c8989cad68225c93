package input

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/mmapfile"
	"github.com/iotrace/iotrace/output"
)

var jsonlFormat = Format{
	Name:        "jsonl",
	Description: "JSON Lines written by iotrace",
	Match: func(head []byte) bool {
		return bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte(output.JSONLMagic))
	},
	Open: openJSONL,
}

// jsonlReader reads one trace of a jsonl file: the whole file, or the
// bytes [off, off+n) of one of several concatenated traces.
type jsonlReader struct {
	f      *os.File
	name   string
	off, n int64
	refs   *int // readers of f still open; the last Close closes f
	count  passCount
	size   int64 // of the section (n, or the file's size)
}

func openJSONL(path string) (Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &jsonlReader{f: f, name: path, n: -1, refs: new(int(1)), size: st.Size()}, nil
}

// BytesRead implements Progress.
func (r *jsonlReader) BytesRead() (read, size int64) {
	if r.n >= 0 {
		return r.count.n.Load(), r.n
	}
	return r.count.n.Load(), r.size
}

// release is m.Release that counts the pass's progress.
func (r *jsonlReader) release(m *mmapfile.Mapping) func(upto int) {
	return func(upto int) {
		r.count.at(upto)
		m.Release(upto)
	}
}

func (r *jsonlReader) Format() string { return "jsonl" }

func (r *jsonlReader) section() io.Reader {
	if r.n < 0 {
		return io.NewSectionReader(r.f, 0, 1<<62)
	}
	return io.NewSectionReader(r.f, r.off, r.n)
}

func (r *jsonlReader) Run(ctx context.Context, sink event.Sink) error {
	r.count.begin()
	if m, ok := mmapfile.Map(r.f, r.off, r.n); ok {
		defer m.Close()
		err := m.Guard(r.name, func() error { return output.ReadJSONLBytes(ctx, m.Bytes(), r.name, sink, r.release(m)) })
		r.count.at(len(m.Bytes()))
		return err
	}
	return output.ReadJSONL(ctx, r.count.reader(r.section()), r.name, sink)
}

func (r *jsonlReader) Close() error {
	if r.refs == nil {
		return nil
	}
	*r.refs--
	last := *r.refs == 0
	r.refs = nil
	if !last {
		return nil
	}
	return r.f.Close()
}

// ScanFacts delivers every fact of the trace to fn, passing over event
// lines without decoding them. Damage is left for Run to report.
func (r *jsonlReader) ScanFacts(ctx context.Context, fn func(f *event.Fact) error) error {
	r.count.begin()
	if m, ok := mmapfile.Map(r.f, r.off, r.n); ok {
		defer m.Close()
		err := m.Guard(r.name, func() error { return output.ScanJSONLFactsBytes(ctx, m.Bytes(), r.name, fn, r.release(m)) })
		r.count.at(len(m.Bytes()))
		return err
	}
	return output.ScanJSONLFacts(ctx, r.count.reader(r.section()), r.name, fn)
}

// jsonlTraceStarts returns the byte offsets at which the traces of a jsonl
// file begin: 0, and every header line whose previous non-blank line is a
// trailer line (iotrace's jsonl traces concatenate: cat a.jsonl b.jsonl).
// Lines are compared after leading spaces, tabs and CRs.
//
// The file is read in large chunks searched for the trailer's prefix;
// only around a trailer are lines looked at. Going line by line through a
// multi-gigabyte file cost about 8 % of a report.
func jsonlTraceStarts(f *os.File) (starts []int64, err error) {
	if m, ok := mmapfile.Map(f, 0, -1); ok {
		defer m.Close()
		err = m.Guard(f.Name(), func() error {
			starts = jsonlTraceStartsIn(m.Bytes(), m.Release)
			return nil
		})
		return starts, err
	}
	return jsonlTraceStartsChunked(f, 4<<20)
}

// jsonlTraceStartsIn is jsonlTraceStarts for a whole file in memory,
// searched a window at a time so that release can be told what is done
// with.
func jsonlTraceStartsIn(data []byte, release func(upto int)) []int64 {
	const window = 16 << 20
	prefix := []byte(jsonlTrailerStart)
	starts := []int64{0}
	for from := 0; from < len(data); {
		to := min(from+window, len(data))
		// The prefixes that begin in [from, to).
		seg := data[from:min(to+len(prefix)-1, len(data))]
		for k := 0; ; k++ {
			x := bytes.Index(seg[k:], prefix)
			if x < 0 {
				break
			}
			k += x
			// With the whole file at hand and at offset 0, the file
			// itself is never read.
			s, _ := jsonlStartAfterTrailer(nil, data, 0, from+k, true)
			if s > 0 && s > starts[len(starts)-1] {
				starts = append(starts, s)
			}
		}
		if release != nil {
			release(to)
		}
		from = to
	}
	return starts
}

func jsonlTraceStartsChunked(f io.ReaderAt, chunk int) ([]int64, error) {
	name := "jsonl file"
	if n, ok := f.(interface{ Name() string }); ok {
		name = n.Name()
	}
	prefix := []byte(jsonlTrailerStart)
	buf := make([]byte, chunk)
	starts := []int64{0}
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return starts, fmt.Errorf("%s: read at byte offset %d: %w", name, off, err)
		}
		data := buf[:n]
		eof := n < len(buf) || errors.Is(err, io.EOF)
		for k := 0; ; k++ {
			x := bytes.Index(data[k:], prefix)
			if x < 0 {
				break
			}
			k += x
			s, err := jsonlStartAfterTrailer(f, data, off, k, eof)
			if err != nil {
				return starts, fmt.Errorf("%s: %w", name, err)
			}
			if s > 0 && s > starts[len(starts)-1] {
				starts = append(starts, s)
			}
		}
		if eof {
			return starts, nil
		}
		// Step back so that a prefix across the boundary is found once.
		off += int64(n - (len(prefix) - 1))
	}
}

// jsonlStartAfterTrailer looks at the trailer prefix found at data[k]
// (file offset off+k; eof says data runs to the end of the file): when it
// begins a line and the next non-blank line is a header, it returns that
// line's offset; else 0.
func jsonlStartAfterTrailer(f io.ReaderAt, data []byte, off int64, k int, eof bool) (int64, error) {
	// Only spaces, tabs and CRs may come before it on its line.
	at := off + int64(k)
	for i := k - 1; ; i-- {
		if i < 0 {
			if off == 0 {
				break // the start of the file
			}
			// Before the chunk (rare): look back through the file.
			ok, err := spaceToLineStart(f, off)
			if err != nil || !ok {
				return 0, err
			}
			break
		}
		c := data[i]
		if c == '\n' {
			break
		}
		if c != ' ' && c != '\t' && c != '\r' {
			return 0, nil
		}
	}
	// Pass the trailer line, then blank lines: in the chunk when they
	// end there, else through the file.
	i := k
	first := true
	for {
		e := bytes.IndexByte(data[i:], '\n')
		if e < 0 && !eof {
			return startAfterTrailerInFile(f, at)
		}
		line := data[i:]
		if e >= 0 {
			line = data[i : i+e+1]
		}
		if !first {
			switch classifyJSONLLine(line) {
			case lineHeader:
				return off + int64(i), nil
			case lineOther, lineTrailer:
				return 0, nil // a trailer again: its own search finds what follows
			}
		}
		first = false
		if e < 0 {
			return 0, nil // the end of the file
		}
		i += e + 1
	}
}

// jsonlLineFragment is how much of a line jsonlTraceStarts classifies:
// what the line-by-line scan it replaced saw of a long line (its buffer).
const jsonlLineFragment = 256 << 10

type jsonlLineKind int

const (
	lineBlank jsonlLineKind = iota
	lineHeader
	lineTrailer
	lineOther
)

// classifyJSONLLine says what a line (with its '\n', if any) is, from its
// first jsonlLineFragment bytes, after leading spaces, tabs and CRs.
func classifyJSONLLine(line []byte) jsonlLineKind {
	if len(line) > jsonlLineFragment {
		line = line[:jsonlLineFragment]
	}
	t := bytes.TrimLeft(line, " \t\r")
	switch {
	case bytes.HasPrefix(t, []byte(output.JSONLMagic)):
		return lineHeader
	case bytes.HasPrefix(t, []byte(jsonlTrailerStart)):
		return lineTrailer
	case len(bytes.TrimSpace(t)) > 0:
		return lineOther
	}
	return lineBlank
}

// startAfterTrailerInFile is the end of jsonlStartAfterTrailer for lines
// that run past the chunk: it reads them from the file at at (the
// trailer line's prefix).
func startAfterTrailerInFile(f io.ReaderAt, at int64) (int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, at, 1<<62), jsonlLineFragment)
	pos := at
	first := true
	for {
		raw, err := br.ReadSlice('\n')
		lineAt := pos
		pos += int64(len(raw))
		kind := classifyJSONLLine(raw) // before the rest of a long line overwrites raw
		for errors.Is(err, bufio.ErrBufferFull) {
			var more []byte
			more, err = br.ReadSlice('\n')
			pos += int64(len(more))
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read at byte offset %d: %w", pos, err)
		}
		if !first {
			switch kind {
			case lineHeader:
				return lineAt, nil
			case lineOther, lineTrailer:
				return 0, nil
			}
		}
		first = false
		if err != nil {
			return 0, nil // the end of the file
		}
	}
}

// spaceToLineStart reports whether the bytes before end back to the
// previous '\n' (or the start of the file) are all spaces, tabs or CRs.
func spaceToLineStart(f io.ReaderAt, end int64) (bool, error) {
	var block [4096]byte
	for end > 0 {
		from := max(end-int64(len(block)), 0)
		b := block[:end-from]
		if _, err := f.ReadAt(b, from); err != nil {
			return false, fmt.Errorf("read at byte offset %d: %w", from, err)
		}
		for i := len(b) - 1; i >= 0; i-- {
			switch b[i] {
			case '\n':
				return true, nil
			case ' ', '\t', '\r':
			default:
				return false, nil
			}
		}
		end = from
	}
	return true, nil
}

// jsonlTrailerStart is how iotrace's jsonl writer begins a trailer line.
const jsonlTrailerStart = `{"type":"trailer"`

// splitJSONL returns one reader per trace of the jsonl file at path.
func splitJSONL(path string) ([]Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	starts, err := jsonlTraceStarts(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if len(starts) == 1 {
		return []Reader{&jsonlReader{f: f, name: path, n: -1, refs: new(int(1)), size: st.Size()}}, nil
	}
	out := make([]Reader, len(starts))
	refs := new(int(len(starts)))
	for i, s := range starts {
		end := st.Size()
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		out[i] = &jsonlReader{f: f, off: s, n: end - s, refs: refs,
			name: fmt.Sprintf("%s (trace %d of %d, from byte offset %d)", path, i+1, len(starts), s)}
	}
	return out, nil
}
