package cli

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
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
