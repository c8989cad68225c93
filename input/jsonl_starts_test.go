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
	for _, chunk := range []int{len(jsonlTrailerStart), len(jsonlTrailerStart) + 1, 23, 64, 257, 4096, len(data) + 1} {
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
	trl = jsonlTrailerStart + `,"end":1}` + "\n"
	evt = `{"type":"event","id":1,"path":"{\"type\":\"trailer\""}` + "\n"
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
