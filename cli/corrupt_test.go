package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/tracefile"
)

// The whole-file corruption test (issue #17): damaged copies of the .iot,
// .etl and jsonl fixtures go through iotrace print (in-process), which
// must never panic, must exit 2 for every damaged file, must name the
// byte offset (or, for jsonl, the line or byte offset) of the damage
// somewhere on stderr, and must print every intact event. The assertions
// are on the exit code, the offset and the events printed, never on the
// wording of the messages.
//
// Fixtures:
//   - .iot: tracefile/testdata/v1/*.iot, as they are (format version 1,
//     a few chunks each) and rewritten by the current writer in chunks of
//     iotSmallChunk records (many boundaries, the current version).
//   - .etl: every real-world trace of the shared fixtures
//     (../shared/testdata/etl; missing, the test skips, but fails in CI).
//   - jsonl: the intact jsonl traces of output's FuzzReadJSONL corpus
//     (jsonlSeeds), and an .iot fixture converted to jsonl
//     (jsonlConverted).
//
// Every boundary (chunk, buffer, line) is cut at and every chunk, buffer
// and line duplicated. Bit flips are a fixed deterministic sample per
// fixture, not every byte (that would take hours): a few positions in
// every chunk and line, and in etlSample buffers of each .etl file, where
// the stray header buffer is placed at etlSample boundaries too (each
// case reads the whole file: every boundary of the 360-buffer fixture
// would double the test's time). The whole test takes about 85 s of CPU.
//
// The events expected after a cut: in .iot, those of the chunks before
// it (each chunk read alone gives its events); in jsonl, those of the
// lines before it; in .etl, those whose records (every record timed
// within the event's span) lie in the buffers before it
// (etlLastBuffers).
//
// "Stray trailer" per format: in .iot, the trailer chunk inserted at a
// chunk boundary; in jsonl, the trailer line inserted at a line boundary;
// in .etl, which has no trailer, what stands at the edge of the file:
// the log-file header buffer (buffer 0) inserted at a buffer boundary.

// printOut runs iotrace print -f jsonl on data (written to dir/name) in
// process and returns the event lines printed, the exit code and stderr.
func printOut(t *testing.T, dir, name string, data []byte) (events []string, code int, stderr string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code = Main(context.Background(), []string{"print", "-f", "jsonl", p}, strings.NewReader(""), &out, &errb)
	for line := range strings.Lines(out.String()) {
		if strings.HasPrefix(line, `{"type":"event"`) {
			events = append(events, strings.TrimSuffix(line, "\n"))
		}
	}
	return events, code, errb.String()
}

// bag is a multiset of event keys.
type bag map[string]int

func bagOf(lines []string, key func(string) string) bag {
	b := bag{}
	for _, l := range lines {
		b[key(l)]++
	}
	return b
}

func (b bag) add(o bag) {
	for k, n := range o {
		b[k] += n
	}
}

func (b bag) size() int {
	n := 0
	for _, c := range b {
		n += c
	}
	return n
}

// notIn returns the keys of want that got holds fewer times (at most
// a few, for messages).
func notIn(want, got bag) []string {
	var out []string
	for k, n := range want {
		if got[k] < n {
			out = append(out, k)
			if len(out) == 5 {
				break
			}
		}
	}
	return out
}

// equal reports whether a and b hold the same keys the same number of
// times.
func (b bag) equal(o bag) bool {
	return len(notIn(b, o)) == 0 && len(notIn(o, b)) == 0
}

// eventID is the key of an event of a .iot or jsonl trace: its id (the
// fixtures' ids are unique but for boundary.iot's, hence a multiset).
// The jsonl writer puts it second: {"type":"event","id":N,...}.
func eventID(line string) string {
	const prefix = `{"type":"event","id":`
	rest, ok := strings.CutPrefix(line, prefix)
	if i := strings.IndexByte(rest, ','); ok && i > 0 {
		return rest[:i]
	}
	return "bad line: " + line
}

// etlKey is the key of an event of an .etl trace: what its own records
// fix (the id, the path, the process and the flags depend on the rest of
// the file: a truncated file numbers and names its events as it can).
func etlKey(line string) string {
	var k strings.Builder
	for _, f := range []string{"layer", "op", "native", "time", "duration", "cpu", "tid", "offset", "size"} {
		k.WriteString(jsonField(line, f))
		k.WriteByte('|')
	}
	return k.String()
}

// namesOffset reports whether msg names byte offset off, in decimal or in
// hex, as a number of its own.
func namesOffset(msg string, off int) bool {
	re := regexp.MustCompile(`(?i)(^|[^0-9a-z])(` + strconv.Itoa(off) + `|0x0*` + strconv.FormatInt(int64(off), 16) + `)([^0-9a-z]|$)`)
	return re.MatchString(msg)
}

// namesLine reports whether msg names jsonl line n.
func namesLine(msg string, n int) bool {
	return regexp.MustCompile(`\bline ` + strconv.Itoa(n) + `\b`).MatchString(msg)
}

// splice returns b[:at] + ins + b[at:].
// Kinds of damage message: how the reader says it went on (or not).
const (
	msgStopped  = iota // reading stopped at the damage
	msgPast            // read past, something lost
	msgLossless        // read past, nothing lost (a repeat, a stray trailer)
)

// truthful checks that stderr says what the reader did (#17: the message
// must say truthfully what was and was not printed).
func truthful(t *testing.T, what, errs string, kind int) {
	t.Helper()
	stopped := strings.Contains(errs, damageStopped)
	past := strings.Contains(errs, damageReadPast)
	none := strings.Contains(errs, damageNoneLost)
	var ok bool
	switch kind {
	case msgStopped:
		ok = stopped && !none
	case msgPast:
		ok = past && !none
	case msgLossless:
		ok = past && none && !stopped
	}
	if !ok {
		t.Errorf("%s: the message does not say what happened (stopped %v, read past %v, none lost %v; want %s): %s",
			what, stopped, past, none, [...]string{"stopped", "read past, some lost", "read past, none lost"}[kind], errs)
	}
}

func splice(b []byte, at int, ins []byte) []byte {
	out := make([]byte, 0, len(b)+len(ins))
	return append(append(append(out, b[:at]...), ins...), b[at:]...)
}

// flip returns b with the byte at i xor mask.
func flip(b []byte, i int, mask byte) []byte {
	out := bytes.Clone(b)
	out[i] ^= mask
	return out
}

// flipMask is the deterministic bit a sampled flip at offset i toggles.
func flipMask(i int) byte { return 1 << (i % 8) }

// parallel runs fn as a parallel subtest with a directory of its own.
func parallel(t *testing.T, name string, fn func(t *testing.T, dir string)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		fn(t, testenv.TempDir(t))
	})
}

// spread returns at most n of the integers [from, to), evenly spread,
// both ends included: a fixed sample.
func spread(from, to, n int) []int {
	var out []int
	if to-from <= n {
		for k := from; k < to; k++ {
			out = append(out, k)
		}
		return out
	}
	for i := range n {
		out = append(out, from+i*(to-1-from)/(n-1))
	}
	return out
}

// jsonField returns the raw value of the field name of an event line as
// the jsonl writer writes it (flat: no objects inside), "" when absent.
// A quote inside a JSON string is escaped, so `"name":` only matches a
// key.
func jsonField(line, name string) string {
	_, v, ok := strings.Cut(line, `"`+name+`":`)
	if !ok {
		return ""
	}
	if strings.HasPrefix(v, `"`) {
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case '\\':
				j++
			case '"':
				return v[:j+1]
			}
		}
		return v
	}
	if j := strings.IndexAny(v, ",}]"); j >= 0 {
		return v[:j]
	}
	return v
}

// ---- .iot ----

// iotSmallChunk is the chunk size, in records, of the rewritten .iot
// fixtures.
const iotSmallChunk = 100

// iotChunks returns the offsets of the chunks of a well-formed .iot file
// (docs/file-format.md: a 12-byte file header, then chunks of a 16-byte
// header whose bytes 8-11 are the payload length) and the file's end.
func iotChunks(b []byte) []int {
	var out []int
	for off := len(tracefile.Magic) + 4; off+16 <= len(b); {
		out = append(out, off)
		off += 16 + int(binary.LittleEndian.Uint32(b[off+8:]))
	}
	return append(out, len(b))
}

// iotFixtures returns the .iot fixtures by name: each as it is and
// rewritten in small chunks by the current writer.
func iotFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(testenv.RepoRoot(t), "tracefile", "testdata", "v1", "*.iot"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no .iot fixtures: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		out[name] = b
		r, err := tracefile.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := tracefile.NewWriter(&buf, tracefile.WriterOptions{ChunkRecords: iotSmallChunk})
		err = r.Run(context.Background(), w)
		r.Close()
		if err != nil {
			t.Fatalf("%s: rewrite: %v", name, err)
		}
		out[strings.TrimSuffix(name, ".iot")+"-small-chunks.iot"] = buf.Bytes()
	}
	return out
}

func TestCorruptIOT(t *testing.T) {
	for name, good := range iotFixtures(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			corruptIOT(t, good)
		})
	}
}

func corruptIOT(t *testing.T, good []byte) {
	dir := testenv.TempDir(t)
	all, code, errs := printOut(t, dir, "good.iot", good)
	if code != 0 || len(all) == 0 {
		t.Fatalf("intact file: %d events, exit %d: %s", len(all), code, errs)
	}
	full := bagOf(all, eventID)
	ch := iotChunks(good)
	last := len(ch) - 2 // the trailer chunk
	if ch[last+1] != len(good) || good[ch[last]+4] != 3 {
		t.Fatalf("chunk walk: %v does not end with the trailer at the end of the file", ch)
	}
	// The events of each records chunk, read alone after the header
	// chunk; together they are the whole file's.
	perChunk := make([]bag, last)
	sum := bag{}
	for k := 1; k < last; k++ {
		ev, code, errs := printOut(t, dir, "one.iot", append(bytes.Clone(good[:ch[1]]), good[ch[k]:ch[k+1]]...))
		if code != 2 {
			t.Fatalf("chunk %d alone: exit %d: %s", k, code, errs)
		}
		perChunk[k] = bagOf(ev, eventID)
		sum.add(perChunk[k])
	}
	if !sum.equal(full) {
		t.Fatalf("the chunks read one by one hold %d events, the file %d", sum.size(), full.size())
	}
	before := func(k int) bag { // the events of the records chunks before chunk k
		b := bag{}
		for j := 1; j < k && j < last; j++ {
			b.add(perChunk[j])
		}
		return b
	}
	except := func(k int) bag { // every event but chunk k's
		b := bag{}
		for j := 1; j < last; j++ {
			if j != k {
				b.add(perChunk[j])
			}
		}
		return b
	}
	check := func(t *testing.T, dir, what string, data []byte, off int, want bag, kind int) {
		t.Helper()
		ev, code, errs := printOut(t, dir, "bad.iot", data)
		got := bagOf(ev, eventID)
		if code != 2 || !namesOffset(errs, off) || !got.equal(want) {
			t.Errorf("%s: exit %d (want 2), offset %d named: %v, %d events of %d intact (missing %v): %s",
				what, code, off, namesOffset(errs, off), got.size(), want.size(), notIn(want, got), errs)
		}
		truthful(t, what, errs, kind)
	}
	parallel(t, "truncated", func(t *testing.T, dir string) {
		// At every chunk boundary before the trailer's end (the header
		// chunk's start included), and in the middle of every chunk: the
		// chunks before the cut print, nothing else.
		for k := 0; k <= last; k++ {
			check(t, dir, fmt.Sprintf("cut at chunk %d (offset %d)", k, ch[k]), good[:ch[k]], ch[k], before(k), msgStopped)
			mid := (ch[k] + ch[k+1]) / 2
			check(t, dir, fmt.Sprintf("cut inside chunk %d (offset %d)", k, mid), good[:mid], ch[k], before(k), msgStopped)
		}
	})
	parallel(t, "duplicated", func(t *testing.T, dir string) {
		// Every chunk (header and trailer included) twice in a row: the
		// copy is named, nothing prints twice, nothing is lost.
		for k := 0; k <= last; k++ {
			dup := splice(good, ch[k+1], good[ch[k]:ch[k+1]])
			kind := msgLossless
			if k == last {
				kind = msgStopped // the trailer, then nothing but its copy
			}
			check(t, dir, fmt.Sprintf("chunk %d (offset %d) repeated", k, ch[k]), dup, ch[k+1], full, kind)
		}
	})
	parallel(t, "stray trailer", func(t *testing.T, dir string) {
		// The trailer chunk at every chunk boundary after the header: the
		// chunks after it print too. (Right before the trailer, it is the
		// trailer repeated: above.)
		tl := good[ch[last]:ch[last+1]]
		for k := 1; k < last; k++ {
			check(t, dir, fmt.Sprintf("trailer at chunk boundary %d (offset %d)", k, ch[k]), splice(good, ch[k], tl), ch[k], full, msgLossless)
		}
	})
	parallel(t, "bit flip", func(t *testing.T, dir string) {
		// In every chunk, a sample of bytes: the sync, the type, the
		// length, the CRC, the payload's first, middle and last bytes.
		// The CRC catches each: that chunk is lost, the others print.
		// (The 12-byte file header is left alone: damaged, the file is no
		// longer recognized as a trace at all.)
		for k := 0; k <= last; k++ {
			end := ch[k+1]
			for _, i := range []int{ch[k], ch[k] + 4, ch[k] + 9, ch[k] + 13, ch[k] + 16, (ch[k] + 16 + end) / 2, end - 1} {
				if i >= end {
					continue // an empty payload
				}
				mask := flipMask(i)
				kind := msgPast
				switch k {
				case 0:
					kind = msgLossless // no event in the header
				case last:
					kind = msgStopped // at the trailer, the last chunk: its counts lost
				}
				check(t, dir, fmt.Sprintf("chunk %d (offset %d): byte %d ^ %#x", k, ch[k], i, mask), flip(good, i, mask), ch[k], except(k), kind)
			}
		}
	})
}

// ---- .etl ----

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

// etlLastBuffers returns, for each event span [start, end] (the event
// model's nanoseconds) of the .etl file at path, the last buffer holding
// a record timed within it, or -1. An event is made of records timed
// within its span (its start, its completion; its name and its process
// come from elsewhere, but etlKey leaves them out), so a file cut at
// buffer k still holds every record of the events whose last buffer is
// before k. (A time cut-off alone would leave few events to check: an
// idle processor's buffer, flushed at the end, holds records from the
// start.)
func etlLastBuffers(t *testing.T, path string, spans [][2]int64) []int {
	t.Helper()
	r, err := etl.Open(path, etl.Options{Order: etl.OrderFile})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type stamp struct {
		at  int64
		buf int
	}
	var recs []stamp
	rs := r.Records()
	for {
		rec, err := rs.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		recs = append(recs, stamp{r.Header().Nanos(rec.Timestamp), rec.Buffer})
	}
	slices.SortFunc(recs, func(a, b stamp) int { return cmp.Compare(a.at, b.at) })
	out := make([]int, len(spans))
	for i, sp := range spans {
		out[i] = -1
		j, _ := slices.BinarySearchFunc(recs, sp[0], func(s stamp, at int64) int { return cmp.Compare(s.at, at) })
		for ; j < len(recs) && recs[j].at <= sp[1]; j++ {
			out[i] = max(out[i], recs[j].buf)
		}
	}
	return out
}

func TestCorruptETL(t *testing.T) {
	dir := testenv.ETLDir(t)
	paths, err := filepath.Glob(filepath.Join(dir, "*.etl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no .etl fixtures in %s: %v", dir, err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Parallel()
			corruptETL(t, p)
		})
	}
}

// etlSample is how many buffers of a file get a stray header buffer
// before them, and how many get bit flips: a fixed sample, evenly spread
// (the largest fixture has 360 buffers, and each case reads the whole
// file).
const etlSample = 12

func corruptETL(t *testing.T, path string) {
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := testenv.TempDir(t)
	all, code, errs := printOut(t, dir, "good.etl", good)
	if code != 0 {
		t.Fatalf("intact file: exit %d: %s", code, errs)
	}
	full := bagOf(all, etlKey)
	bufs := etlBuffers(good)
	n := len(bufs) - 1
	if bufs[n] != len(good) || n < 2 {
		t.Fatalf("buffer walk: %v", bufs)
	}
	spans := make([][2]int64, len(all))
	for i, l := range all {
		tm, err1 := strconv.ParseInt(jsonField(l, "time"), 10, 64)
		d, err2 := strconv.ParseInt(jsonField(l, "duration"), 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("event without a time or duration: %s", l)
		}
		spans[i] = [2]int64{tm, tm + d}
	}
	lastBuf := etlLastBuffers(t, path, spans)
	// intact returns the events whose records all lie before buffer k.
	intact := func(k int) bag {
		b := bag{}
		for i, l := range all {
			if lastBuf[i] < k {
				b[etlKey(l)]++
			}
		}
		return b
	}
	if w := intact(n); !w.equal(full) {
		t.Fatalf("the whole file's buffers do not hold every event: %d of %d", w.size(), full.size())
	}
	parallel(t, "truncated", func(t *testing.T, dir string) {
		// At every buffer boundary: every event whose records all lie
		// before the cut prints (a truncated file may print more: events
		// left without their completion).
		checked := 0
		defer func() { t.Logf("%d cuts, %d intact events checked (the file has %d)", n-1, checked, full.size()) }()
		for k := 1; k < n; k++ {
			ev, code, errs := printOut(t, dir, "cut.etl", good[:bufs[k]])
			want, got := intact(k), bagOf(ev, etlKey)
			checked += want.size()
			if m := notIn(want, got); code != 2 || !namesOffset(errs, bufs[k]) || len(m) > 0 {
				t.Errorf("cut at buffer %d (offset %d): exit %d (want 2), offset named: %v, intact events not printed: %v: %s",
					k, bufs[k], code, namesOffset(errs, bufs[k]), m, errs)
			}
			truthful(t, fmt.Sprintf("cut at buffer %d", k), errs, msgStopped)
		}
	})
	// same checks a file whose events are the whole file's, unchanged.
	same := func(t *testing.T, dir, what string, data []byte, off int) {
		t.Helper()
		ev, code, errs := printOut(t, dir, "bad.etl", data)
		truthful(t, what, errs, msgLossless)
		got := bagOf(ev, etlKey)
		if code != 2 || !namesOffset(errs, off) || !got.equal(full) {
			t.Errorf("%s: exit %d (want 2), offset %d named: %v, %d events of %d (missing %v, extra %v): %s",
				what, code, off, namesOffset(errs, off), got.size(), full.size(), notIn(full, got), notIn(got, full), errs)
		}
	}
	parallel(t, "duplicated", func(t *testing.T, dir string) {
		// Every buffer (the header buffer included) twice in a row: read
		// once, the copy named.
		for k := 0; k < n; k++ {
			same(t, dir, fmt.Sprintf("buffer %d (offset %d) repeated", k, bufs[k]), splice(good, bufs[k+1], good[bufs[k]:bufs[k+1]]), bufs[k+1])
		}
	})
	parallel(t, "stray header", func(t *testing.T, dir string) {
		// The log-file header buffer (buffer 0) again before a sample of
		// the buffers: ETL's stray trailer.
		for _, k := range spread(1, n, etlSample) {
			same(t, dir, fmt.Sprintf("header buffer at buffer boundary %d (offset %d)", k, bufs[k]), splice(good, bufs[k], good[:bufs[1]]), bufs[k])
		}
	})
	parallel(t, "bit flip", func(t *testing.T, dir string) {
		for _, k := range spread(0, n, etlSample) {
			// A bit of the buffer's size (byte 1): the walk from buffer to
			// buffer breaks, at this buffer, where its size leads, or
			// (landing on a boundary) at the end where the header's buffer
			// count shows buffers missing. The events before this buffer
			// print. (Buffer 0's size damaged makes the file unrecognizable: the
			// reader cannot locate any buffer, exit 1.)
			i := bufs[k] + 1
			if k == 0 {
				i = (etl.BufferHeaderSize + bufs[1]) / 2
				if _, code, errs := printOut(t, dir, "flip.etl", flip(good, i, flipMask(i))); code != 0 && code != 2 {
					t.Errorf("buffer 0: byte %d ^ %#x: exit %d: %s", i, flipMask(i), code, errs)
				}
				continue
			}
			size := int(binary.LittleEndian.Uint32(good[bufs[k]:])) ^ int(flipMask(i))<<8
			ev, code, errs := printOut(t, dir, "flip.etl", flip(good, i, flipMask(i)))
			named := namesOffset(errs, bufs[k]) || namesOffset(errs, bufs[k]+size)
			for j := k + 1; j <= n && !named; j++ {
				named = namesOffset(errs, bufs[j])
			}
			if m := notIn(intact(k), bagOf(ev, etlKey)); code != 2 || !named || len(m) > 0 {
				t.Errorf("buffer %d (offset %d): size byte %d ^ %#x: exit %d (want 2), offset named: %v, intact events not printed: %v: %s",
					k, bufs[k], i, flipMask(i), code, named, m, errs)
			}
			// A bit in the middle of its records: ETL has no checksums, a
			// flip there can go unseen or change an event; the reader
			// must neither crash nor fail otherwise.
			i = (bufs[k] + etl.BufferHeaderSize + bufs[k+1]) / 2
			if _, code, errs := printOut(t, dir, "flip.etl", flip(good, i, flipMask(i))); code != 0 && code != 2 {
				t.Errorf("buffer %d (offset %d): byte %d ^ %#x: exit %d: %s", k, bufs[k], i, flipMask(i), code, errs)
			}
		}
	})
}

// ---- jsonl ----

// jsonlSeeds are the intact traces of output's FuzzReadJSONL corpus (its
// other entries are damaged on purpose).
var jsonlSeeds = []string{"linux-small", "hex-and-numbers"}

// jsonlConverted are the .iot fixtures also converted to jsonl: the
// small one with every field set. (linux.iot and windows.iot, 1,500 lines
// each, would make every-line cases too slow; boundary.iot converts to a
// jsonl trace the reader refuses: its source 255 is written as
// "source(255)", an unknown source to the reader.)
var jsonlConverted = []string{"allfields"}

// jsonlFixtures returns the jsonl fixtures by name: the corpus traces,
// and jsonlConverted converted to jsonl.
func jsonlFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	root := testenv.RepoRoot(t)
	out := map[string][]byte{}
	for _, s := range jsonlSeeds {
		b, err := os.ReadFile(filepath.Join(root, "output", "testdata", "fuzz", "FuzzReadJSONL", s))
		if err != nil {
			t.Fatal(err)
		}
		// go test fuzz v1, then []byte("...").
		_, lit, _ := strings.Cut(string(b), "\n")
		lit = strings.TrimSpace(lit)
		if !strings.HasPrefix(lit, "[]byte(") || !strings.HasSuffix(lit, ")") {
			t.Fatalf("corpus entry %s: not a []byte: %.40s", s, lit)
		}
		data, err := strconv.Unquote(lit[len("[]byte(") : len(lit)-1])
		if err != nil {
			t.Fatalf("corpus entry %s: %v", s, err)
		}
		out[s+".jsonl"] = []byte(data)
	}
	dir := testenv.TempDir(t)
	for _, f := range jsonlConverted {
		p := filepath.Join(root, "tracefile", "testdata", "v1", f+".iot")
		name := f + ".jsonl"
		dst := filepath.Join(dir, name)
		if _, errs, code := runIotrace(t, "convert", p, "-o", dst); code != 0 {
			t.Fatalf("convert %s: exit %d: %s", p, code, errs)
		}
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// jsonlCase is an intact jsonl fixture split into lines (each with its
// '\n'), with the events printed from it.
type jsonlCase struct {
	lines []string
	ids   []string // the event id of each line ("" for other lines)
	offs  []int    // the byte offset of each line, and the file's size
	full  bag
}

func newJSONLCase(t *testing.T, good []byte) *jsonlCase {
	t.Helper()
	c := &jsonlCase{}
	all, code, errs := printOut(t, testenv.TempDir(t), "good.jsonl", good)
	if code != 0 || len(all) == 0 {
		t.Fatalf("intact file: %d events, exit %d: %s", len(all), code, errs)
	}
	c.full = bagOf(all, eventID)
	c.lines = slices.Collect(strings.Lines(string(good)))
	if !strings.HasPrefix(c.lines[len(c.lines)-1], `{"type":"trailer"`) || !strings.HasPrefix(c.lines[0], `{"type":"header"`) {
		t.Fatal("not a header, lines and a trailer")
	}
	off := 0
	for k, l := range c.lines {
		c.offs = append(c.offs, off)
		off += len(l)
		id := ""
		if c.kind(k) == "event" {
			id = eventID(l)
		}
		c.ids = append(c.ids, id)
	}
	c.offs = append(c.offs, off)
	return c
}

// kind returns the type of line k.
func (c *jsonlCase) kind(k int) string {
	for _, typ := range []string{"header", "fact", "event", "trailer"} {
		if strings.HasPrefix(c.lines[k], `{"type":"`+typ+`"`) {
			return typ
		}
	}
	return "other"
}

// events returns the events of lines [from, to) but for line skip.
func (c *jsonlCase) events(from, to, skip int) bag {
	b := bag{}
	for k := from; k < to; k++ {
		if k != skip && c.ids[k] != "" {
			b[c.ids[k]]++
		}
	}
	return b
}

// offset returns the byte offset of line k.
func (c *jsonlCase) offset(k int) int { return c.offs[k] }

// with returns the file of lines[:k] + ins + lines[k+drop:].
func (c *jsonlCase) with(k int, ins string, drop int) []byte {
	var b strings.Builder
	for _, l := range c.lines[:k] {
		b.WriteString(l)
	}
	b.WriteString(ins)
	for _, l := range c.lines[k+drop:] {
		b.WriteString(l)
	}
	return []byte(b.String())
}

// check prints data and wants exit 2, line n (1-based) or byte offset
// off named, and every event of want printed, none more than the file
// holds.
func (c *jsonlCase) check(t *testing.T, dir, what string, data []byte, lines []int, off int, want bag, kind int) {
	t.Helper()
	ev, code, errs := printOut(t, dir, "bad.jsonl", data)
	truthful(t, what, errs, kind)
	got := bagOf(ev, eventID)
	named := namesOffset(errs, off)
	for _, n := range lines {
		named = named || namesLine(errs, n)
	}
	if code != 2 || !named || len(notIn(want, got)) > 0 || len(notIn(got, c.full)) > 0 {
		t.Errorf("%s: exit %d (want 2), line %v or offset %d named: %v, %d events of %d intact (missing %v, extra %v): %s",
			what, code, lines, off, named, got.size(), want.size(), notIn(want, got), notIn(got, c.full), errs)
	}
}

func TestCorruptJSONL(t *testing.T) {
	for name, good := range jsonlFixtures(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			corruptJSONL(t, good)
		})
	}
}

func corruptJSONL(t *testing.T, good []byte) {
	c := newJSONLCase(t, good)
	L := len(c.lines)
	parallel(t, "truncated", func(t *testing.T, dir string) {
		// At every line boundary (the trailer's start included): the
		// events before the cut print.
		for k := 1; k < L; k++ {
			c.check(t, dir, fmt.Sprintf("cut before line %d", k+1), c.with(k, "", L-k), nil, c.offset(k), c.events(0, k, -1), msgStopped)
		}
	})
	parallel(t, "line cut short", func(t *testing.T, dir string) {
		// Every line but the header cut in the middle, the rest of the
		// file kept: that line is named, every other event prints.
		for k := 1; k < L; k++ {
			l := c.lines[k]
			want := c.events(0, L, k)
			if c.kind(k) == "trailer" {
				want = c.events(0, L, -1)
			}
			c.check(t, dir, fmt.Sprintf("line %d cut short", k+1), c.with(k, l[:len(l)/2]+"\n", 1), []int{k + 1}, c.offset(k), want, msgPast)
		}
	})
	parallel(t, "duplicated", func(t *testing.T, dir string) {
		// Every line but the header twice in a row (the header: see
		// TestCorruptJSONLRepeatedHeader). A repeated event or trailer is
		// named and prints once; a repeated fact binds what it bound:
		// facts carry no identity, and a writer may repeat one, so it is
		// not required to be reported.
		for k := 1; k < L; k++ {
			data := c.with(k+1, c.lines[k], 0)
			if c.kind(k) == "fact" {
				ev, code, errs := printOut(t, dir, "bad.jsonl", data)
				if got := bagOf(ev, eventID); (code != 0 && code != 2) || !got.equal(c.full) {
					t.Errorf("fact line %d repeated: exit %d, %d events of %d: %s", k+1, code, got.size(), c.full.size(), errs)
				}
				continue
			}
			// A repeated trailer: the first copy is the one before the
			// end, and may be the one named.
			c.check(t, dir, fmt.Sprintf("%s line %d repeated", c.kind(k), k+1), data, []int{k + 1, k + 2}, c.offset(k+1), c.full, msgLossless)
		}
	})
	parallel(t, "bit flip", func(t *testing.T, dir string) {
		// In every line but the header: its first byte ('{' becomes
		// another character: always damage), then one in its middle (JSON
		// has no checksum: a flip inside a string can go unseen). Either
		// way the other lines' events print.
		for k := 1; k < L; k++ {
			want := c.events(0, L, k)
			if c.kind(k) == "trailer" {
				want = c.full
			}
			at := c.offset(k)
			c.check(t, dir, fmt.Sprintf("line %d: first byte ^ 0x40", k+1), flip(c.with(0, "", 0), at, 0x40), []int{k + 1}, at, want, msgPast)
			i := at + len(c.lines[k])/2
			if c.lines[k][len(c.lines[k])/2] == '\n' {
				continue
			}
			ev, code, errs := printOut(t, dir, "bad.jsonl", flip(c.with(0, "", 0), i, flipMask(i)))
			got := bagOf(ev, eventID)
			if (code != 0 && code != 2) || (code == 2 && !namesLine(errs, k+1) && !namesOffset(errs, at)) || len(notIn(want, got)) > 0 {
				t.Errorf("line %d: byte %d ^ %#x: exit %d, line named: %v, %d events of %d intact (missing %v): %s",
					k+1, i, flipMask(i), code, namesLine(errs, k+1), got.size(), want.size(), notIn(want, got), errs)
			}
		}
	})
}

// TestCorruptJSONLStrayTrailer: the trailer line at every line boundary
// between the header and the trailer. The reader must read on past it:
// every event prints, the stray trailer (its line, the line after it, or
// its offset) is named, exit 2.
func TestCorruptJSONLStrayTrailer(t *testing.T) {
	for name, good := range jsonlFixtures(t) {
		parallel(t, name, func(t *testing.T, dir string) {
			c := newJSONLCase(t, good)
			L := len(c.lines)
			for k := 1; k < L-1; k++ {
				c.check(t, dir, fmt.Sprintf("trailer before line %d", k+1), c.with(k, c.lines[L-1], 0), []int{k + 1, k + 2}, c.offset(k), c.full, msgLossless)
			}
		})
	}
}

// TestCorruptJSONLRepeatedHeader: the header line twice in a row. The
// copy must be named (exit 2) and every event still print.
func TestCorruptJSONLRepeatedHeader(t *testing.T) {
	for name, good := range jsonlFixtures(t) {
		parallel(t, name, func(t *testing.T, dir string) {
			c := newJSONLCase(t, good)
			c.check(t, dir, "header line repeated", c.with(1, c.lines[0], 0), []int{2}, c.offset(1), c.full, msgLossless)
		})
	}
}
