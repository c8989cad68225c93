//go:build unix

package input

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/output"
)

// truncatingSink cuts the file short when the first event arrives.
type truncatingSink struct {
	path   string
	events int
}

func (s *truncatingSink) Begin(*event.Header) error { return nil }
func (s *truncatingSink) Fact(*event.Fact) error    { return nil }
func (s *truncatingSink) End(*event.Trailer) error  { return nil }

func (s *truncatingSink) Event(e *event.Event) error {
	if s.events == 0 {
		if err := os.Truncate(s.path, 0); err != nil {
			return err
		}
	}
	s.events++
	return nil
}

// TestMappedJSONLCutWhileRead: a jsonl trace cut short by someone else
// while it is read (mapped) ends the read with an error naming the file
// and the offset, after the events already read, instead of a crash.
func TestMappedJSONLCutWhileRead(t *testing.T) {
	rec := synth.NewRecorder()
	if err := synth.Generate(synth.Options{Seed: 7, Events: 20_000}, rec); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rec.Trace().Replay(output.NewJSONL(&buf)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	jr, err := openJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	s := &truncatingSink{path: path}
	err = jr.Run(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "changed while it was read") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v after %d events", err, s.events)
	}
	if s.events == 0 || s.events >= 20_000 {
		t.Errorf("%d events before the error", s.events)
	}
}
