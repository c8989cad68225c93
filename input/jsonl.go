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
	Description: "JSON Lines with iotrace's schema",
	Match:       output.MaybeJSONL,
	Open:        openJSONL,
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
// Lines are classified by output.ClassifyJSONLLine.
//
// The file is read in large chunks searched for jsonlTrailerWord, which
// every trailer line holds (iotrace's own and other tools'); only around
// it are lines looked at. Going line by line through a multi-gigabyte
// file cost about 8 % of a report.
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

// jsonlTrailerWord is in every line output.ClassifyJSONLLine takes for a
// trailer: the end of its type's value.
const jsonlTrailerWord = `trailer"`

// jsonlTraceStartsIn is jsonlTraceStarts for a whole file in memory,
// searched a window at a time so that release can be told what is done
// with.
func jsonlTraceStartsIn(data []byte, release func(upto int)) []int64 {
	const window = 16 << 20
	word := []byte(jsonlTrailerWord)
	starts := []int64{0}
	for from := 0; from < len(data); {
		to := min(from+window, len(data))
		// The words that begin in [from, to).
		seg := data[from:min(to+len(word)-1, len(data))]
		for k := 0; ; k++ {
			x := bytes.Index(seg[k:], word)
			if x < 0 {
				break
			}
			k += x
			// With the whole file at hand and at offset 0, the file
			// itself is never read.
			s, end, _ := jsonlStartAfterTrailer(nil, data, 0, from+k, true)
			if s > 0 && s > starts[len(starts)-1] {
				starts = append(starts, s)
			}
			k = max(k, end-from-1) // the rest of the line: looked at
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
	word := []byte(jsonlTrailerWord)
	chunk = max(chunk, len(word))
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
			x := bytes.Index(data[k:], word)
			if x < 0 {
				break
			}
			k += x
			s, end, err := jsonlStartAfterTrailer(f, data, off, k, eof)
			if err != nil {
				return starts, fmt.Errorf("%s: %w", name, err)
			}
			if s > 0 && s > starts[len(starts)-1] {
				starts = append(starts, s)
			}
			k = max(k, end-1) // the rest of the line: looked at
		}
		if eof {
			return starts, nil
		}
		// Step back so that a word across the boundary is found once.
		off += int64(n - (len(word) - 1))
	}
}

// jsonlStartAfterTrailer looks at the line that holds jsonlTrailerWord at
// data[k] (file offset off+k; eof says data runs to the end of the
// file): when it is a trailer line and the next non-blank line is a
// header, it returns that line's offset; else 0. end is where in data
// the line ends (len(data) when past it).
func jsonlStartAfterTrailer(f io.ReaderAt, data []byte, off int64, k int, eof bool) (start int64, end int, err error) {
	ls := bytes.LastIndexByte(data[:k], '\n') + 1
	if ls == 0 && off > 0 {
		// The line begins before the chunk (rare): read it from the file.
		at, err := lineStart(f, off)
		if err != nil {
			return 0, len(data), err
		}
		end = len(data)
		if e := bytes.IndexByte(data[k:], '\n'); e >= 0 {
			end = k + e + 1
		}
		s, err := startAfterTrailerInFile(f, at)
		return s, end, err
	}
	// The trailer line, then blank lines: in the chunk when they end
	// there, else through the file.
	first := true
	for i := ls; ; {
		e := bytes.IndexByte(data[i:], '\n')
		if e < 0 && !eof {
			s, err := startAfterTrailerInFile(f, off+int64(ls))
			return s, len(data), err
		}
		line := data[i:]
		if e >= 0 {
			line = data[i : i+e+1]
		}
		kind := classifyJSONLLine(line)
		if first {
			end = i + len(line)
			if kind != output.JSONLTrailer {
				return 0, end, nil
			}
		} else if kind != output.JSONLBlank {
			if kind == output.JSONLHeader {
				return off + int64(i), end, nil
			}
			return 0, end, nil // a trailer again: its own search finds what follows
		}
		first = false
		if e < 0 {
			return 0, end, nil // the end of the file
		}
		i += e + 1
	}
}

// jsonlLineFragment is how much of a line jsonlTraceStarts classifies:
// what the line-by-line scan it replaced saw of a long line (its buffer).
const jsonlLineFragment = 256 << 10

// classifyJSONLLine says what a line (with its '\n', if any) is, from its
// first jsonlLineFragment bytes (output.ClassifyJSONLLine).
func classifyJSONLLine(line []byte) output.JSONLLineKind {
	if len(line) > jsonlLineFragment {
		line = line[:jsonlLineFragment]
	}
	return output.ClassifyJSONLLine(line)
}

// startAfterTrailerInFile is the end of jsonlStartAfterTrailer for lines
// that run past the chunk: it reads them from the file at at (the start
// of the line that may be a trailer).
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
		switch {
		case first && kind != output.JSONLTrailer:
			return 0, nil
		case first, kind == output.JSONLBlank:
		case kind == output.JSONLHeader:
			return lineAt, nil
		default:
			return 0, nil
		}
		first = false
		if err != nil {
			return 0, nil // the end of the file
		}
	}
}

// lineStart returns the offset of the start of the line that holds the
// byte before end: after the previous '\n', or 0.
func lineStart(f io.ReaderAt, end int64) (int64, error) {
	var block [4096]byte
	for end > 0 {
		from := max(end-int64(len(block)), 0)
		b := block[:end-from]
		if _, err := f.ReadAt(b, from); err != nil {
			return 0, fmt.Errorf("read at byte offset %d: %w", from, err)
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return from + int64(i) + 1, nil
		}
		end = from
	}
	return 0, nil
}

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
