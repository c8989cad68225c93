package tracefile

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// v1Fixture is a version-1 file committed in testdata/v1: NAME.iot and
// the content a reader must deliver from it, NAME.golden.gz (a gzipped
// dump, see dumpTrace).
type v1Fixture struct {
	name  string
	trace func() *synth.Recorded
	opts  WriterOptions
}

func v1Fixtures() []v1Fixture {
	return []v1Fixture{
		{"linux", func() *synth.Recorded {
			return withoutLayers(synth.Trace(synth.Options{OS: "linux", Seed: 21, Events: 1200, MaxOp: event.OpReadlink}))
		}, WriterOptions{ChunkRecords: 500}},
		{"windows", func() *synth.Recorded {
			return withoutLayers(synth.Trace(synth.Options{OS: "windows", Seed: 22, Events: 1200}))
		}, WriterOptions{ChunkRecords: 500}},
		{"allfields", allFieldsV1, WriterOptions{ChunkRecords: 25}},
		{"boundary", boundaryTrace, WriterOptions{ChunkRecords: 50}},
	}
}

// allFieldsV1 is synth.AllFieldsTrace with only the ops and fields that
// existed when the version-1 fixtures were written (ops are appended,
// never renumbered: the fixture's events are a prefix of today's; a
// read's page-cache provenance came with version 4).
func allFieldsV1() *synth.Recorded {
	r := withoutLayers(withoutProvenance(synth.AllFieldsTrace()))
	n := 0
	for n < len(r.Events) && r.Events[n].Op < event.OpReadlink {
		n++
	}
	r.Events = r.Events[:n]
	order := r.Order[:0]
	for _, it := range r.Order {
		if it.Kind != synth.ItemEvent || it.Index < n {
			order = append(order, it)
		}
	}
	r.Order = order
	return r
}

// withoutLayers clears the header's layers traced, a field that came
// after the fixtures were written.
func withoutLayers(r *synth.Recorded) *synth.Recorded {
	r.Header.Layers = 0
	r.Trailer.Layers = 0
	return r
}

// boundaryValues are unsigned values at every varint length boundary of
// both encodings (LEB128: 7 bits a byte; prefix varint: 7 bits a byte up
// to 8 bytes, then 9 bytes) and at the ends of the signed ranges.
func boundaryValues() []uint64 {
	vs := []uint64{0, 1, 2, math.MaxUint64, math.MaxUint64 - 1, 1 << 63, 1<<63 - 1, 1<<32 - 1, 1 << 32}
	for b := 7; b <= 63; b += 7 {
		vs = append(vs, 1<<b-1, 1<<b)
	}
	return vs
}

// boundaryTrace has events and facts (of every kind and handle space)
// whose fields take the boundary values in turn, strings of every length
// class (empty, invalid UTF-8, 127/128 bytes, one of 16 KiB) and a header
// and trailer at the extremes.
func boundaryTrace() *synth.Recorded {
	vs := boundaryValues()
	strs := []string{"", "\xff\xfe invalid \xc3", strings.Repeat("a", 127), strings.Repeat("b", 128), "ü/ö ✓\x00nul"}
	r := &synth.Recorded{Began: true, Ended: true}
	r.Header = event.Header{Source: event.Source(255), OS: strs[1], OSVersion: strs[3], Hostname: strs[4],
		CPUs: math.MaxUint32, PointerSize: 255, StartWall: math.MinInt64,
		Clock:   event.Clock{Kind: event.ClockKind(255), Freq: math.MaxUint64, Origin: math.MaxInt64},
		Command: strs[2], Tool: "boundary"}
	for i := 0; i < 3*len(vs); i++ {
		u := func(k int) uint64 { return vs[(i+k)%len(vs)] }
		s := func(k int) int64 { return int64(u(k)) }
		str := func(k int) string { return strs[(i+k)%len(strs)] }
		if i%3 == 0 {
			k := event.FactKind(1 + i/3%int(event.FactVolume))
			r.Order = append(r.Order, synth.Item{Kind: synth.ItemFact, Index: len(r.Facts)})
			r.Facts = append(r.Facts, event.Fact{Kind: k, Time: s(0), Rundown: i%2 == 0, End: i%5 == 0,
				Space: event.HandleSpace(i % 5), Pid: uint32(u(1)), ProcStart: s(2), Tid: uint32(u(3)),
				PPid: uint32(u(4)), Handle: u(5), Dev: event.Device{Major: uint32(u(6)), Minor: uint32(u(7)), IsDisk: i%2 == 1},
				Name: str(0), Image: str(1), Detail: str(2)})
		}
		r.Order = append(r.Order, synth.Item{Kind: synth.ItemEvent, Index: len(r.Events)})
		r.Events = append(r.Events, event.Event{
			ID: u(0), Source: event.Source(u(1)), Layer: event.Layer(u(2)), Op: event.Op(u(3)), Native: str(0),
			Time: s(4), Duration: s(5), Wait: s(6), CPU: uint32(u(7)), Pid: uint32(u(8)), Tid: uint32(u(9)),
			ProcStart: s(10), Comm: str(1), Path: str(2), Path2: str(3), FD: int32(u(11)), FileObject: u(12),
			FileKey: u(13), Inode: u(14), Offset: s(15), Size: u(16), Bytes: s(17), Status: event.Status(u(18)),
			Code: uint32(u(19)), Flags: event.Flags(u(20)), OpenFlags: uint32(u(21)), Mode: uint32(u(22)),
			Disposition: uint8(u(23)), Priority: uint8(u(24)), IOFlags: uint32(u(25)), Info: uint32(u(26)),
			Dev: event.Device{Major: uint32(u(27)), Minor: uint32(u(28)), IsDisk: i%2 == 0}, Sector: u(29),
			Request: u(30), Cause: u(31), CausedIOs: uint32(u(32)), CausedBytes: u(33), Note: str(4),
		})
		if i == 1 {
			r.Events[i].Note = strings.Repeat("c", 16384) // a length of 3 bytes in either encoding
		}
	}
	r.Trailer.End = math.MaxInt64
	for i, v := range vs[:6] {
		r.Trailer.Stats.Counters = append(r.Trailer.Stats.Counters,
			event.Counter{Kind: event.CounterKind(i), Name: strs[i%len(strs)], Value: v})
	}
	return r
}

// dumpTrace renders a trace as text, one line for the header, each event
// and fact in recorded order, and the trailer, listing every field that
// is not zero: an exact, stable golden format (it does not depend on the
// event package's String methods).
func dumpTrace(r *synth.Recorded) string {
	var b strings.Builder
	fmt.Fprintf(&b, "began=%v ended=%v\n", r.Began, r.Ended)
	b.WriteString("header")
	dumpFields(&b, "", reflect.ValueOf(r.Header))
	b.WriteByte('\n')
	for _, it := range r.Order {
		if it.Kind == synth.ItemEvent {
			b.WriteString("event")
			dumpFields(&b, "", reflect.ValueOf(r.Events[it.Index]))
		} else {
			b.WriteString("fact")
			dumpFields(&b, "", reflect.ValueOf(r.Facts[it.Index]))
		}
		b.WriteByte('\n')
	}
	b.WriteString("trailer")
	dumpFields(&b, "", reflect.ValueOf(r.Trailer))
	b.WriteByte('\n')
	return b.String()
}

func dumpFields(b *strings.Builder, prefix string, v reflect.Value) {
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), prefix+v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.Struct:
			dumpFields(b, name+".", f)
		case reflect.Slice:
			for j := 0; j < f.Len(); j++ {
				dumpFields(b, fmt.Sprintf("%s[%d].", name, j), f.Index(j))
			}
		default:
			if !f.IsZero() {
				fmt.Fprintf(b, " %s=%s", name, dumpValue(f))
			}
		}
	}
}

func dumpValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	}
	panic(fmt.Sprintf("dumpValue: unexpected kind %s", v.Kind()))
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}

func gzipBytes(s string) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte(s))
	zw.Close()
	return buf.Bytes()
}

// firstDiff returns the first differing line of two dumps.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\nwant %s\n got %s", i+1, w, g)
		}
	}
	return "no difference"
}

// TestWriteV1Fixtures (re)writes testdata/v1. The committed files were
// written by the version-1 writer of iotrace before version 2 existed;
// TestV1Fixtures checks that today's reader reads them exactly, and
// TestV1WriterMatchesFixtures that WriterOptions{Version: 1} still writes
// them byte for byte.
func TestWriteV1Fixtures(t *testing.T) {
	if os.Getenv("IOTRACE_WRITE_V1_FIXTURES") != "1" {
		t.Skip("set IOTRACE_WRITE_V1_FIXTURES=1 to rewrite testdata/v1")
	}
	dir := filepath.Join("testdata", "v1")
	must(t, os.MkdirAll(dir, 0o755))
	for _, fx := range v1Fixtures() {
		want := fx.trace()
		opts := fx.opts
		opts.Version = 1
		// Chunks of one size, as that writer wrote them (the size of the
		// first chunks is the writer's policy, not the encoding's).
		opts.FirstChunkSize = -1
		b := write(t, want, opts)
		got, err := read(t, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := synth.Compare(want, got); err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
		must(t, os.WriteFile(filepath.Join(dir, fx.name+".iot"), b, 0o644))
		must(t, os.WriteFile(filepath.Join(dir, fx.name+".golden.gz"), gzipBytes(dumpTrace(want)), 0o644))
	}
}

// TestV1Fixtures reads the committed version-1 files and compares what
// they deliver with their goldens, then checks that the same content
// written by today's writer (version 2) reads back identically.
func TestV1Fixtures(t *testing.T) {
	for _, fx := range v1Fixtures() {
		b, err := os.ReadFile(filepath.Join("testdata", "v1", fx.name+".iot"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
		if r.Version() != 1 {
			t.Fatalf("%s: version %d, want a version-1 fixture", fx.name, r.Version())
		}
		got, err := read(t, b)
		if err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
		want := gunzip(t, filepath.Join("testdata", "v1", fx.name+".golden.gz"))
		if d := dumpTrace(got); d != want {
			t.Fatalf("%s.iot differs from its golden: %s", fx.name, firstDiff(want, d))
		}
		again, err := read(t, write(t, got, WriterOptions{}))
		if err != nil {
			t.Fatalf("%s rewritten: %v", fx.name, err)
		}
		if err := synth.Compare(got, again); err != nil {
			t.Fatalf("%s: version 1 and its rewrite differ:\n%v", fx.name, err)
		}
	}
}

// TestV1WriterMatchesFixtures: the version-1 writer (generated from the
// version-2 source) writes the fixtures byte for byte as the version-1
// writer of iotrace did before version 2 existed, given its chunk sizes.
func TestV1WriterMatchesFixtures(t *testing.T) {
	for _, fx := range v1Fixtures() {
		want, err := os.ReadFile(filepath.Join("testdata", "v1", fx.name+".iot"))
		if err != nil {
			t.Fatal(err)
		}
		opts := fx.opts
		opts.Version = 1
		// Chunks of one size, as that writer wrote them (the size of the
		// first chunks is the writer's policy, not the encoding's).
		opts.FirstChunkSize = -1
		if got := write(t, fx.trace(), opts); !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s: the version-1 writer writes %d bytes, the fixture has %d; first difference at byte %d", fx.name, len(got), len(want), i)
		}
	}
}

// TestVersionsDecodeIdentically writes the same traces in both versions:
// both decode to the source trace, and version 2 is never larger.
func TestVersionsDecodeIdentically(t *testing.T) {
	traces := map[string]*synth.Recorded{
		"linux":     synth.Trace(synth.Options{OS: "linux", Seed: 31, Events: 5000}),
		"windows":   synth.Trace(synth.Options{OS: "windows", Seed: 32, Events: 5000, Resolved: true}),
		"allfields": synth.AllFieldsTrace(),
		"boundary":  boundaryTrace(),
		"random":    randomTrace(33, 300),
	}
	for name, want := range traces {
		want = withoutProvenance(want) // versions 1 and 2 cannot hold it
		for _, opts := range []WriterOptions{{}, {ChunkRecords: 1}, {ChunkRecords: 37}, {ChunkSize: 2000}} {
			var files [3][]byte
			for v := 1; v <= 2; v++ {
				o := opts
				o.Version = v
				files[v] = write(t, want, o)
				r, err := NewReader(bytes.NewReader(files[v]))
				if err != nil {
					t.Fatal(err)
				}
				if r.Version() != v {
					t.Fatalf("%s: written with Version %d, reads as version %d", name, v, r.Version())
				}
				got, err := read(t, files[v])
				if err != nil {
					t.Fatalf("%s v%d %+v: %v", name, v, opts, err)
				}
				if err := synth.Compare(want, got); err != nil {
					t.Fatalf("%s v%d %+v:\n%v", name, v, opts, err)
				}
			}
			if len(files[2]) > len(files[1]) {
				t.Errorf("%s %+v: version 2 is %d bytes, version 1 %d", name, opts, len(files[2]), len(files[1]))
			}
		}
	}
}

func TestWriterVersionOption(t *testing.T) {
	for _, v := range []int{-1, 5, 1 << 16} {
		w := NewWriter(io.Discard, WriterOptions{Version: v})
		h := event.Header{}
		if err := w.Begin(&h); err == nil || !strings.Contains(err.Error(), "cannot write format version") {
			t.Errorf("Version %d: %v", v, err)
		}
	}
	for v, want := range map[int]uint16{0: Version, 1: 1, 2: 2, 3: 3, 4: 4} {
		b := write(t, &synth.Recorded{Began: true, Ended: true}, WriterOptions{Version: v})
		if got := binary.LittleEndian.Uint16(b[len(Magic):]); got != want {
			t.Errorf("Version %d: the file says version %d, want %d", v, got, want)
		}
	}
}
