package input

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/output"
)

// traceStartsByLine is the line-by-line scan jsonlTraceStarts replaced,
// kept as the reference the chunked search must agree with.
func traceStartsByLine(r io.Reader) []int64 {
	br := bufio.NewReaderSize(r, jsonlLineFragment)
	starts := []int64{0}
	var off int64
	afterTrailer, lineStart := false, true
	for {
		raw, err := br.ReadSlice('\n')
		if len(raw) > 0 {
			if lineStart {
				switch output.ClassifyJSONLLine(raw) {
				case output.JSONLHeader:
					if afterTrailer {
						starts = append(starts, off)
					}
					afterTrailer = false
				case output.JSONLTrailer:
					afterTrailer = true
				case output.JSONLOther:
					afterTrailer = false
				}
			}
			off += int64(len(raw))
			lineStart = raw[len(raw)-1] == '\n'
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return starts
		}
	}
}

// checkTraceStarts compares the chunked search, with chunks from just
// longer than the trailer's prefix to larger than the data, against the
// line-by-line scan.
func checkTraceStarts(t *testing.T, data []byte) {
	t.Helper()
	want := traceStartsByLine(bytes.NewReader(data))
	for _, chunk := range []int{len(jsonlTrailerWord), len(jsonlTrailerWord) + 1, 23, 64, 257, 4096, len(data) + 1} {
		got, err := jsonlTraceStartsChunked(bytes.NewReader(data), chunk)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("chunk %d: starts %v, want %v, in %q", chunk, got, want, data)
		}
	}
	if got := jsonlTraceStartsIn(data, nil); !slices.Equal(got, want) {
		t.Fatalf("in memory: starts %v, want %v, in %q", got, want, data)
	}
}

var (
	hdr = output.JSONLMagic + `,"os":"linux"}` + "\n"
	trl = `{"type":"trailer","end":1}` + "\n"
	// Python's json.dumps of a header and a trailer, keys reordered.
	pyHdr = `{"os": "linux", "type": "header"}` + "\n"
	pyTrl = `{"end": 1, "counters": [], "type": "trailer"}` + "\r\n"
	evt   = `{"type":"event","id":1,"path":"{\"type\":\"trailer\""}` + "\n"
)

// traceStartsCases are concatenations with blank lines, indented lines,
// CRLF, trailer prefixes inside lines and values, trailers not followed
// by a header, and no final newline.
var traceStartsCases = []string{
	"",
	hdr + evt + trl,
	hdr + evt + trl + hdr + evt + trl,
	hdr + trl + "\n\n  \t\r\n" + hdr + trl + " \t" + hdr + trl,
	hdr + trl + evt + hdr + trl,
	hdr + trl + trl + "\n" + hdr,
	hdr + "x" + trl + hdr,
	hdr + "   " + trl + "\r\n" + strings.Repeat(" ", 300) + hdr + trl,
	hdr + strings.Repeat(" ", 100) + trl + hdr,
	hdr + trl + "\v\n" + hdr,
	hdr + trl + strings.TrimSuffix(hdr, "\n"),
	strings.TrimSuffix(trl, "\n"),
	trl + hdr + trl + hdr,
	hdr + evt + strings.TrimSuffix(trl, "\n") + " " + hdr,
	pyHdr + evt + pyTrl + "\n" + pyHdr + pyTrl + hdr + trl + pyHdr,
	pyHdr + `{"type": "event", "path": "trailer\"", "x": "header\""}` + "\n" + pyTrl + strings.Repeat(" ", 70) + pyHdr,
	`{"type": "trailer", "type": "event"}` + "\n" + pyHdr + `{"TYPE": "trailer"}` + "\n" + pyHdr,
}

func TestJSONLTraceStartsChunked(t *testing.T) {
	for _, c := range traceStartsCases {
		checkTraceStarts(t, []byte(c))
	}
	// Two traces found where expected, not just agreed on.
	got, _ := jsonlTraceStartsChunked(bytes.NewReader([]byte(traceStartsCases[2])), 20)
	if want := []int64{0, int64(len(hdr + evt + trl))}; !slices.Equal(got, want) {
		t.Errorf("starts %v, want %v", got, want)
	}
	// Traces written by another tool (spaces, keys reordered, CRLF)
	// concatenated with iotrace's own.
	py := pyHdr + evt + pyTrl + "\n" + pyHdr + pyTrl + hdr + trl + pyHdr
	got, _ = jsonlTraceStartsChunked(bytes.NewReader([]byte(py)), 20)
	a := len(pyHdr + evt + pyTrl + "\n")
	b := a + len(pyHdr+pyTrl)
	if want := []int64{0, int64(a), int64(b), int64(b + len(hdr+trl))}; !slices.Equal(got, want) {
		t.Errorf("other tools' traces: starts %v, want %v", got, want)
	}
}

func FuzzJSONLTraceStarts(f *testing.F) {
	for _, c := range traceStartsCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkTraceStarts(t, data)
	})
}

// errReaderAt fails every read.
type errReaderAt struct{}

func (errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, fmt.Errorf("disk on fire") }

func TestJSONLTraceStartsReadError(t *testing.T) {
	if _, err := jsonlTraceStartsChunked(errReaderAt{}, 64); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("error %v", err)
	}
}
