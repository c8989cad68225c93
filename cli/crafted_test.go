package cli

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/bounded"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/tracefile"
)

// Inputs built on purpose from the formats' own size and count fields
// (issue 35), end to end: what a command prints and says of them.

// TestCraftedETLBuffers: a buffer of a real trace copied with a new
// SequenceNumber is read once (it was read twice: 151 disk events
// instead of 119, exit 0), and said; a buffer the logger did not write
// (BuffersWritten) is read and said, and nothing is lost.
func TestCraftedETLBuffers(t *testing.T) {
	path := filepath.Join(testenv.ETLDir(t), "filtrace_win11_kernel_diskio_fileio-names_compressed.etl")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := testenv.TempDir(t)
	all, code, errs := printOut(t, dir, "good.etl", good)
	if code != 0 {
		t.Fatalf("intact: exit %d: %s", code, errs)
	}
	bufs := etlBuffers(good)
	k := 5
	copyOf := bytes.Clone(good[bufs[k]:bufs[k+1]])
	binary.LittleEndian.PutUint64(copyOf[0x18:], 1<<40) // SequenceNumber
	for _, c := range []struct {
		what string
		data []byte
		n    int
	}{
		{"a buffer copied with a new sequence number", append(bytes.Clone(good), copyOf...), len(all)},
		{"a buffer more than BuffersWritten (the header buffer's count lowered)", lowerWritten(good), len(all)},
	} {
		ev, code, errs := printOut(t, dir, "bad.etl", c.data)
		if code != 2 || len(ev) != c.n {
			t.Errorf("%s: exit %d (want 2), %d events (want %d): %s", c.what, code, len(ev), c.n, errs)
		}
		truthful(t, c.what, errs, msgLossless)
	}
}

// lowerWritten returns the .etl file b with its log-file header's
// BuffersWritten one less.
func lowerWritten(b []byte) []byte {
	out := bytes.Clone(b)
	// The header record (SYSTEM64, 0x20 bytes) follows the buffer
	// header; BuffersWritten is at 36 in its payload.
	at := 0x48 + 0x20 + 36
	binary.LittleEndian.PutUint32(out[at:], binary.LittleEndian.Uint32(out[at:])-1)
	return out
}

// TestCraftedIOTRemovedChunk: a records chunk removed cleanly from a .iot
// (every CRC right) is damage, exit 2, and the summary does not say "no
// events lost" (it printed 1,767 events of 1,793 with "no events lost").
func TestCraftedIOTRemovedChunk(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "tracefile", "testdata", "v1", "linux.iot"))
	if err != nil {
		t.Fatal(err)
	}
	ch := iotChunks(good)
	bad := append(bytes.Clone(good[:ch[3]]), good[ch[4]:]...)
	dir := testenv.TempDir(t)
	all, _, _ := printOut(t, dir, "good.iot", good)
	ev, code, errs := printOut(t, dir, "bad.iot", bad)
	if code != 2 || len(ev) >= len(all) || !strings.Contains(errs, "missing") {
		t.Errorf("a chunk removed: exit %d (want 2), %d events of %d: %s", code, len(ev), len(all), errs)
	}
	truthful(t, "a chunk removed", errs, msgPast)
	var out, errb bytes.Buffer
	p := filepath.Join(dir, "bad.iot")
	Main(t.Context(), []string{"print", p}, strings.NewReader(""), &out, &errb)
	if strings.Contains(out.String(), "no events lost") || !strings.Contains(out.String(), "events in damaged iotrace file chunks") {
		t.Errorf("a chunk removed: the summary says %q", lastLines(out.String(), 4))
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// counting is an output that keeps only its size.
type counting struct{ n int64 }

func (c *counting) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

// writeCrafted writes tr as a .iot file in dir and returns its path and size.
func writeCrafted(t *testing.T, dir, name string, tr *synth.Recorded) (string, int64) {
	t.Helper()
	var buf bytes.Buffer
	w := tracefile.NewWriter(&buf, tracefile.WriterOptions{ChunkRecords: 1 << 20})
	if err := tr.Replay(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, int64(buf.Len())
}

// TestCraftedOutputBounded: what a file holds cannot make print write
// more than outputPerInputByte times it plus outputSlack: a 14 KB .iot of
// a 5,000-frame stack under 2,300 events (it printed 300 MB: now 256
// frames an event), frames in a module of a 4,096-byte name under every
// event (stopped at the limit, exit 2), paths of 60 KB under 1,000 events
// (cut to PATH_MAX in a Linux trace; whole in a Windows one, within the
// limit). Each in well under 2 s of CPU and 100 MB.
func TestCraftedOutputBounded(t *testing.T) {
	dir := testenv.TempDir(t)
	deep := make([]uint64, 5000)
	for i := range deep {
		deep[i] = 0x401000
	}
	events := func(tr *synth.Recorded, n int, set func(e *event.Event)) {
		for i := range n {
			e := event.New()
			e.ID, e.Op, e.Pid, e.Tid, e.Comm = uint64(i+1), event.OpRead, 7, 7, "app"
			set(&e)
			tr.Events = append(tr.Events, e)
		}
	}
	trace := func(os string) *synth.Recorded {
		return &synth.Recorded{Began: true, Ended: true, Header: event.Header{OS: os, Source: event.SourceEBPF}}
	}
	stack := trace("linux")
	stack.Facts = append(stack.Facts, event.Fact{Kind: event.FactStack, Handle: 1, User: deep})
	events(stack, 2300, func(e *event.Event) { e.Stack = 1 })
	module := trace("linux")
	module.Facts = append(module.Facts,
		event.Fact{Kind: event.FactModule, Pid: 7, Handle: 0x400000, Size: 0x100000, Name: "/" + strings.Repeat("m", 4094)},
		event.Fact{Kind: event.FactStack, Handle: 1, User: deep[:event.MaxStackFrames]})
	events(module, 2300, func(e *event.Event) { e.Stack = 1 })
	long := strings.Repeat("/p", 30_000)
	paths := map[string]*synth.Recorded{"linux": trace("linux"), "windows": trace("windows")}
	for _, tr := range paths {
		events(tr, 1000, func(e *event.Event) { e.Path = long })
	}
	for _, c := range []struct {
		name    string
		tr      *synth.Recorded
		stacks  bool
		code    int
		atLeast int64 // bytes the output must reach
		atMost  int64 // and may reach, within the limit (0: the limit)
	}{
		{"deep stack", stack, true, 0, 2300 * event.MaxStackFrames * 10, 2300 * (event.MaxStackFrames + 10) * 40},
		{"long module name", module, true, 2, 0, 0},
		{"long paths, Linux", paths["linux"], false, 0, 1000 * event.MaxPathLinux, 1000 * (event.MaxPathLinux + 400)},
		{"long paths, Windows", paths["windows"], false, 0, 1000 * int64(len(long)), 0},
	} {
		p, size := writeCrafted(t, dir, "crafted.iot", c.tr)
		args := []string{"print", p}
		if c.stacks {
			args = append(args, "--stacks")
		}
		var out counting
		var errb bytes.Buffer
		var code int
		bounded.Check(t, fmt.Sprintf("%s (%d bytes)", c.name, size), bounded.Default, func(func()) {
			code = Main(t.Context(), args, strings.NewReader(""), &out, &errb)
		})
		limit := outputPerInputByte*size + outputSlack
		if c.atMost > 0 {
			limit = min(limit, c.atMost)
		}
		if code != c.code || out.n > limit || out.n < c.atLeast {
			t.Errorf("%s: exit %d (want %d), %d bytes written (limit %d, want %d at least): %s", c.name, code, c.code, out.n, limit, c.atLeast, lastLines(errb.String(), 3))
		}
		if c.code == 2 && !strings.Contains(errb.String(), "the output reached") {
			t.Errorf("%s: the error does not say why the output stopped: %s", c.name, errb.String())
		}
	}
}
