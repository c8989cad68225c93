package input

import (
	"bytes"
	"context"
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

type jsonlReader struct {
	f *os.File
}

func openJSONL(path string) (Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &jsonlReader{f: f}, nil
}

func (r *jsonlReader) Format() string { return "jsonl" }

func (r *jsonlReader) Run(ctx context.Context, sink event.Sink) error {
	return output.ReadJSONL(ctx, r.f, r.f.Name(), sink)
}

func (r *jsonlReader) Close() error { return r.f.Close() }

// ScanFacts delivers every fact of the file to fn, then rewinds for Run.
// Damage is left for Run to report.
func (r *jsonlReader) ScanFacts(ctx context.Context, fn func(f *event.Fact) error) error {
	_ = output.ReadJSONL(ctx, r.f, r.f.Name(), factSink(fn))
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := r.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%s: rewind: %w", r.f.Name(), err)
	}
	return nil
}

// factSink passes facts to a function and ignores the rest.
type factSink func(*event.Fact) error

func (factSink) Begin(*event.Header) error  { return nil }
func (factSink) Event(*event.Event) error   { return nil }
func (f factSink) Fact(x *event.Fact) error { return f(x) }
func (factSink) End(*event.Trailer) error   { return nil }
