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
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/output"
	"github.com/iotrace/iotrace/resolve"
	"github.com/iotrace/iotrace/tracefile"
)

func writeIOT(t *testing.T, tr *synth.Recorded) string {
	t.Helper()
	path := filepath.Join(testenv.TempDir(t), "trace.bin") // the extension does not matter
	w, err := tracefile.Create(path, tracefile.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeJSONL(t *testing.T, tr *synth.Recorded) string {
	t.Helper()
	var buf bytes.Buffer
	if err := tr.Replay(output.NewJSONL(&buf)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(testenv.TempDir(t), "trace.iot") // a misleading extension
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func read(t *testing.T, path string) (string, *synth.Recorded) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := synth.NewRecorder()
	if err := r.Run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return r.Format(), rec.Trace()
}

// TestResolvesFromTheTracesOwnFacts reads unresolved synthetic traces
// (Windows rundowns come at the end) through every format and checks that
// every event gets the name a capture-time resolver would have given it.
func TestResolvesFromTheTracesOwnFacts(t *testing.T) {
	for _, os := range []string{"linux", "windows"} {
		opts := synth.Options{OS: os, Events: 2000, Seed: 9}
		raw := synth.Trace(opts)
		opts.Resolved = true
		want := synth.Trace(opts)
		for _, w := range []struct {
			format string
			write  func(*testing.T, *synth.Recorded) string
		}{{"iot", writeIOT}, {"jsonl", writeJSONL}} {
			format, got := read(t, w.write(t, raw))
			if format != w.format {
				t.Errorf("%s: sniffed as %s", w.format, format)
			}
			if len(got.Events) != len(want.Events) {
				t.Fatalf("%s/%s: %d events, want %d", os, format, len(got.Events), len(want.Events))
			}
			bad, blockUnnamed := 0, uint64(0)
			for i := range want.Events {
				g, e := got.Events[i], want.Events[i]
				if e.Layer == event.LayerBlock {
					// The resolver names block I/O only by FileKey /
					// FileObject; the synthetic capture also names Linux
					// bios by their cause and writeback after a delete.
					if g.Path == "" && e.Path != "" {
						blockUnnamed++
					}
					continue
				}
				if e.Pid == 0 {
					continue // no process fact names the idle process
				}
				if g.Path != e.Path || g.Comm != e.Comm {
					if bad++; bad <= 5 {
						t.Errorf("%s/%s event %d (%s %s): path %q comm %q, want %q %q", os, format, i, g.Op, g.Native, g.Path, g.Comm, e.Path, e.Comm)
					}
				}
			}
			unresolved := got.Trailer.Stats.Get(event.CountUnresolved, resolve.UnresolvedCounter)
			if limit := raw.Trailer.Stats.Total(event.CountUnresolved) + blockUnnamed; unresolved > limit {
				t.Errorf("%s/%s: %d events unresolved, the source says %d cannot be", os, format, unresolved, limit)
			}
		}
	}
}

// TestStaleResolverCountIsReplaced reads a trace that went through a
// resolver before: the count is recomputed, not added to.
func TestStaleResolverCountIsReplaced(t *testing.T) {
	tr := synth.Trace(synth.Options{Events: 500, Seed: 4})
	tr.Trailer.Stats.Add(event.CountUnresolved, resolve.UnresolvedCounter, 1000)
	_, got := read(t, writeIOT(t, tr))
	if n := got.Trailer.Stats.Get(event.CountUnresolved, resolve.UnresolvedCounter); n >= 1000 {
		t.Errorf("stale resolver count kept: %d", n)
	}
}

func TestUnknownFormats(t *testing.T) {
	dir := testenv.TempDir(t)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"elf", []byte("\x7fELF\x02\x01\x01\x00\x00\x00"), `7f 45 4c 46 02 01 01 00 00 00`},
		{"text", []byte("hello, world"), `68 65 6c 6c 6f 2c 20 77 6f 72 6c 64 ("hello, world")`},
		{"json", []byte(`{"type":"event"}`), `not a trace file`},
		{"empty", nil, "empty file"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		os.WriteFile(p, c.data, 0o644)
		_, err := Open(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want it to name the file and say %q", c.name, err, c.want)
		}
		if err != nil && c.name != "empty" && !strings.Contains(err.Error(), "iotrace reads iot") {
			t.Errorf("%s: the error does not list the readable formats: %v", c.name, err)
		}
	}
}

func TestDamagedIOT(t *testing.T) {
	tr := synth.Trace(synth.Options{Events: 20000, Seed: 2, Resolved: true})
	path := writeIOT(t, tr)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)*3/4], 0o644)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := synth.NewRecorder()
	err = r.Run(context.Background(), rec)
	if err == nil || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("truncated file: %v", err)
	}
	got := rec.Trace()
	if !got.Ended || len(got.Events) == 0 || len(got.Events) >= len(tr.Events) {
		t.Fatalf("ended %v, %d of %d events", got.Ended, len(got.Events), len(tr.Events))
	}
	if got.Trailer.Stats.Total(event.CountLost) == 0 {
		t.Error("damage not counted in the trailer")
	}
}

func TestFormatsListed(t *testing.T) {
	var names []string
	for _, f := range Formats() {
		names = append(names, f.Name)
		if f.Description == "" || f.Match == nil || f.Open == nil {
			t.Errorf("format %s incomplete", f.Name)
		}
	}
	if got := strings.Join(names, ","); !strings.HasPrefix(got, "iot,jsonl") {
		t.Errorf("formats %s", got)
	}
}
