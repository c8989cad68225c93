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
}

func openJSONL(path string) (Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &jsonlReader{f: f, name: path, n: -1, refs: new(int(1))}, nil
}

func (r *jsonlReader) Format() string { return "jsonl" }

func (r *jsonlReader) section() io.Reader {
	if r.n < 0 {
		return io.NewSectionReader(r.f, 0, 1<<62)
	}
	return io.NewSectionReader(r.f, r.off, r.n)
}

func (r *jsonlReader) Run(ctx context.Context, sink event.Sink) error {
	return output.ReadJSONL(ctx, r.section(), r.name, sink)
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
	return output.ScanJSONLFacts(ctx, r.section(), r.name, fn)
}

// jsonlTraceStarts returns the byte offsets at which the traces of a jsonl
// file begin: 0, and every header line that follows a trailer line
// (iotrace's jsonl traces concatenate: cat a.jsonl b.jsonl).
func jsonlTraceStarts(f *os.File) ([]int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 256<<10)
	starts := []int64{0}
	var off int64
	afterTrailer, lineStart := false, true
	for {
		raw, err := br.ReadSlice('\n')
		if len(raw) > 0 {
			if lineStart {
				t := bytes.TrimLeft(raw, " \t\r")
				switch {
				case bytes.HasPrefix(t, []byte(output.JSONLMagic)) && afterTrailer:
					starts = append(starts, off)
					afterTrailer = false
				case bytes.HasPrefix(t, []byte(jsonlTrailerStart)):
					afterTrailer = true
				case len(bytes.TrimSpace(t)) > 0:
					afterTrailer = false
				}
			}
			off += int64(len(raw))
			lineStart = raw[len(raw)-1] == '\n'
		}
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				return starts, nil
			}
			return starts, fmt.Errorf("%s: read at byte offset %d: %w", f.Name(), off, err)
		}
	}
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
	if len(starts) == 1 {
		return []Reader{&jsonlReader{f: f, name: path, n: -1, refs: new(int(1))}}, nil
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
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
