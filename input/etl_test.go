package input

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

type etlCount struct {
	begins, events, facts, ends int
	disk                        int
	trailer                     event.Trailer
}

func (c *etlCount) Begin(*event.Header) error { c.begins++; return nil }
func (c *etlCount) Event(e *event.Event) error {
	c.events++
	if e.Layer == event.LayerBlock && e.Path != "" {
		c.disk++
	}
	return nil
}
func (c *etlCount) Fact(*event.Fact) error     { c.facts++; return nil }
func (c *etlCount) End(t *event.Trailer) error { c.ends++; c.trailer = *t; return nil }

// TestOpenETL: an .etl file is recognized by its first bytes (not its
// name) and read with resolved paths.
func TestOpenETL(t *testing.T) {
	src := filepath.Join(testenv.ETLDir(t), "filtrace_win11_kernel_diskio_fileio-names_compressed.etl")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testenv.TempDir(t), "trace.bin") // no .etl extension
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Format() != "etl" {
		t.Fatalf("format %q", r.Format())
	}
	var c etlCount
	if err := r.Run(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
	if c.begins != 1 || c.ends != 1 || c.events != 119 || c.disk != 117 || c.facts == 0 {
		t.Errorf("begins %d ends %d events %d with path %d facts %d", c.begins, c.ends, c.events, c.disk, c.facts)
	}

	// A damaged file: every intact event, the trailer, then an error.
	cut := filepath.Join(testenv.TempDir(t), "cut.etl")
	if err := os.WriteFile(cut, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(cut)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	var c2 etlCount
	if err := r2.Run(context.Background(), &c2); err == nil {
		t.Error("a truncated .etl read without error")
	}
	if c2.begins != 1 || c2.ends != 1 || c2.events == 0 {
		t.Errorf("truncated: begins %d ends %d events %d", c2.begins, c2.ends, c2.events)
	}
}
