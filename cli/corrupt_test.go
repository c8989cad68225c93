package cli

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/tracefile"
)

// The whole-file corruption test (issue #17): damaged copies of .iot,
// .etl and jsonl traces go through iotrace print, which must never panic,
// must exit 2 for every damaged file it can tell is damaged, name the
// offset or line, and print every intact event.

// printEvents runs iotrace print -f jsonl on data and returns the events
// printed, the exit code and stderr.
func printEvents(t *testing.T, dir, name string, data []byte) (int, int, string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runIotrace(t, "print", "-f", "jsonl", p)
	return strings.Count(out, `{"type":"event"`), code, errs
}

// checkDamageMessage checks that stderr says truthfully what the reader
// did: read past damage at offset past (-1: none), saying whether events
// were lost, and stopped reading at offset stop (-1: it did not stop).
func checkDamageMessage(t *testing.T, what, errs string, past, stop int, lost bool) {
	t.Helper()
	if past >= 0 {
		if !strings.Contains(errs, fmt.Sprintf("damaged at byte offset %d", past)) || !strings.Contains(errs, "read past: every intact event was written") {
			t.Errorf("%s: stderr does not say the damage at %d was read past: %s", what, past, errs)
		}
		if none := strings.Contains(errs, "and none was lost"); none == lost {
			t.Errorf("%s: stderr says none lost %v, want %v: %s", what, none, !lost, errs)
		}
	} else if strings.Contains(errs, "read past") {
		t.Errorf("%s: stderr tells of damage read past: %s", what, errs)
	}
	if stop >= 0 {
		if !strings.Contains(errs, fmt.Sprintf("reading stopped at byte offset %d: every event before it was written", stop)) {
			t.Errorf("%s: stderr does not say reading stopped at %d: %s", what, stop, errs)
		}
	} else if strings.Contains(errs, "reading stopped") {
		t.Errorf("%s: stderr says reading stopped, but it went on: %s", what, errs)
	}
}

// iotChunks returns the offsets of the chunks of a well-formed .iot file
// (docs/file-format.md: a file header, then chunks of a 16-byte header
// whose bytes 8-11 are the payload length) and the file's end.
func iotChunks(b []byte) []int {
	var out []int
	for off := len(tracefile.Magic) + 4; off+16 <= len(b); {
		out = append(out, off)
		off += 16 + int(binary.LittleEndian.Uint32(b[off+8:]))
	}
	return append(out, len(b))
}

func TestCorruptIOT(t *testing.T) {
	dir := testenv.TempDir(t)
	tr := synth.Trace(synth.Options{Seed: 61, Events: 3000})
	var buf bytes.Buffer
	w := tracefile.NewWriter(&buf, tracefile.WriterOptions{ChunkRecords: 100})
	if err := tr.Replay(w); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	total := len(tr.Events)
	if n, code, errs := printEvents(t, dir, "good.iot", good); n != total || code != 0 {
		t.Fatalf("intact file: %d events of %d, exit %d: %s", n, total, code, errs)
	}
	chunks := iotChunks(good)
	last := len(chunks) - 2 // the trailer chunk
	for k := 1; k <= last; k++ {
		// Cut at every chunk boundary: the chunks before it print.
		n, code, errs := printEvents(t, dir, "cut.iot", good[:chunks[k]])
		if code != 2 || n > total || !strings.Contains(errs, "offset") {
			t.Errorf("cut at chunk %d (offset %d): %d events, exit %d: %s", k, chunks[k], n, code, errs)
		}
		checkDamageMessage(t, fmt.Sprintf("cut at chunk %d", k), errs, -1, chunks[k], true)
		if k == last {
			continue
		}
		// A flipped byte in the middle of chunk k: that chunk is lost,
		// every other one prints, the damage is named at its offset.
		bad := bytes.Clone(good)
		bad[(chunks[k]+chunks[k+1])/2] ^= 0x40
		n, code, errs = printEvents(t, dir, "flip.iot", bad)
		if code != 2 || n < total-100 || n >= total || !strings.Contains(errs, fmt.Sprint(chunks[k])) {
			t.Errorf("bit flip in chunk %d at %d: %d events of %d, exit %d: %s", k, chunks[k], n, total, code, errs)
		}
		checkDamageMessage(t, fmt.Sprintf("bit flip in chunk %d", k), errs, chunks[k], -1, true)
		// Chunk k twice: nothing printed twice.
		dup := append(append(append([]byte(nil), good[:chunks[k+1]]...), good[chunks[k]:chunks[k+1]]...), good[chunks[k+1]:]...)
		n, code, errs = printEvents(t, dir, "dup.iot", dup)
		if code != 2 || n != total {
			t.Errorf("chunk %d duplicated: %d events of %d, exit %d: %s", k, n, total, code, errs)
		}
		checkDamageMessage(t, fmt.Sprintf("chunk %d duplicated", k), errs, chunks[k+1], -1, false)
		if k == 2 {
			// The summary counts the repeat, not as lost events.
			out, _, _ := runIotrace(t, "print", filepath.Join(dir, "dup.iot"))
			_, problems, _ := strings.Cut(out, "# PROBLEMS")
			if strings.Contains(problems, "iotrace file") || !strings.Contains(out, fmt.Sprintf("iotrace file bytes skipped as damaged (no event lost): %d", chunks[k+1]-chunks[k])) {
				t.Errorf("chunk %d duplicated: the summary counts it as lost, or not at all:\n%s", k, out[strings.LastIndex(out, "# counters"):])
			}
		}
	}
	// A stray trailer in the middle: every chunk after it prints too.
	tl := good[chunks[last]:chunks[last+1]]
	stray := append(append(append([]byte(nil), good[:chunks[3]]...), tl...), good[chunks[3]:]...)
	if n, code, errs := printEvents(t, dir, "stray.iot", stray); code != 2 || n != total || !strings.Contains(errs, "trailer") {
		t.Errorf("stray trailer: %d events of %d, exit %d: %s", n, total, code, errs)
	} else {
		checkDamageMessage(t, "stray trailer", errs, chunks[3], -1, false)
	}
}

// etlBuffers returns the offsets of the buffers of an .etl file (each
// buffer header starts with its size) and the file's end.
func etlBuffers(b []byte) []int {
	var out []int
	for off := 0; off+4 <= len(b); {
		size := int(binary.LittleEndian.Uint32(b[off:]))
		if size <= 0 {
			break
		}
		out = append(out, off)
		off += size
	}
	return append(out, len(b))
}

func TestCorruptETL(t *testing.T) {
	dir := testenv.TempDir(t)
	for _, name := range []string{"filtrace_win11_kernel_diskio_fileio-names_compressed.etl", "tx_win7_http_server_manifest.etl"} {
		good, err := os.ReadFile(filepath.Join(testenv.ETLDir(t), name))
		if err != nil {
			t.Fatal(err)
		}
		total, code, errs := printEvents(t, dir, "good.etl", good)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		bufs := etlBuffers(good)
		for k := 1; k < len(bufs)-1; k += max(1, (len(bufs)-2)/8) {
			// Cut exactly at a buffer boundary: the header's buffer count
			// shows it.
			n, code, errs := printEvents(t, dir, "cut.etl", good[:bufs[k]])
			if code != 2 || n > total || !strings.Contains(errs, "buffer boundary") {
				t.Errorf("%s cut at buffer %d: %d events, exit %d: %s", name, k, n, code, errs)
			}
			checkDamageMessage(t, fmt.Sprintf("%s cut at buffer %d", name, k), errs, -1, bufs[k], true)
			// Buffer k twice: read once, reported.
			dup := append(append(append([]byte(nil), good[:bufs[k+1]]...), good[bufs[k]:bufs[k+1]]...), good[bufs[k+1]:]...)
			n, code, errs = printEvents(t, dir, "dup.etl", dup)
			if code != 2 || n != total || !strings.Contains(errs, "duplicated buffer") {
				t.Errorf("%s buffer %d duplicated: %d events of %d, exit %d: %s", name, k, n, total, code, errs)
			}
			checkDamageMessage(t, fmt.Sprintf("%s buffer %d duplicated", name, k), errs, bufs[k+1], -1, false)
			// A flipped byte (ETL has no checksums: a flip in a payload can
			// go unseen, but it must never crash the reader).
			bad := bytes.Clone(good)
			bad[(bufs[k]+bufs[k+1])/2] ^= 0xff
			if _, code, errs := printEvents(t, dir, "flip.etl", bad); code != 0 && code != 2 {
				t.Errorf("%s flip in buffer %d: exit %d: %s", name, k, code, errs)
			}
		}
	}
}

func TestCorruptJSONL(t *testing.T) {
	dir := testenv.TempDir(t)
	path, tr := writeSynthJSONL(t, dir, "t.jsonl", synth.Options{Seed: 62, Events: 500})
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	total := len(tr.Events)
	lines := strings.SplitAfter(string(good), "\n")
	for k := 1; k < len(lines)-1; k += len(lines) / 10 {
		// Cut at a line boundary: no trailer.
		n, code, errs := printEvents(t, dir, "cut.jsonl", []byte(strings.Join(lines[:k], "")))
		if code != 2 || n > total || !strings.Contains(errs, "trailer") {
			t.Errorf("cut at line %d: %d events, exit %d: %s", k, n, code, errs)
		}
		checkDamageMessage(t, fmt.Sprintf("cut at line %d", k), errs, -1, len(strings.Join(lines[:k], "")), true)
		// Line k twice: reported, nothing printed twice.
		dup := strings.Join(lines[:k+1], "") + lines[k] + strings.Join(lines[k+1:], "")
		n, code, errs = printEvents(t, dir, "dup.jsonl", []byte(dup))
		if strings.HasPrefix(lines[k], `{"type":"event"`) {
			if code != 2 || n != total || !strings.Contains(errs, fmt.Sprintf("line %d", k+2)) {
				t.Errorf("line %d repeated: %d events of %d, exit %d: %s", k+1, n, total, code, errs)
			}
			checkDamageMessage(t, fmt.Sprintf("line %d repeated", k+1), errs, len(strings.Join(lines[:k+1], "")), -1, false)
		}
		// Line k cut in the middle: skipped, named, the rest prints.
		cut := strings.Join(lines[:k], "") + lines[k][:len(lines[k])/2] + "\n" + strings.Join(lines[k+1:], "")
		n, code, errs = printEvents(t, dir, "mid.jsonl", []byte(cut))
		if code != 2 || n < total-1 || !strings.Contains(errs, fmt.Sprintf("line %d", k+1)) {
			t.Errorf("line %d cut: %d events of %d, exit %d: %s", k+1, n, total, code, errs)
		}
		if strings.HasPrefix(lines[k], `{"type":"event"`) {
			checkDamageMessage(t, fmt.Sprintf("line %d cut", k+1), errs, len(strings.Join(lines[:k], "")), -1, true)
		}
	}
	// A trailer line in the middle (issue #17's audit: line 602 of 1551
	// stopped the reading): read past, named, every event prints.
	k := len(lines) * 2 / 5
	trailer := lines[len(lines)-2]
	stray := strings.Join(lines[:k], "") + trailer + strings.Join(lines[k:], "")
	n, code, errs := printEvents(t, dir, "stray.jsonl", []byte(stray))
	if code != 2 || n != total || !strings.Contains(errs, fmt.Sprintf("line %d at byte offset %d: a trailer before the end", k+1, len(strings.Join(lines[:k], "")))) {
		t.Errorf("stray trailer at line %d: %d events of %d, exit %d: %s", k+1, n, total, code, errs)
	}
	checkDamageMessage(t, "stray trailer", errs, len(strings.Join(lines[:k], "")), -1, false)
}
