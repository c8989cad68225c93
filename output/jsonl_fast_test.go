package output

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// genericEvent decodes line as the generic path does (go-json into
// jsonRecord, the KEY_b64 bytes restored, an event built from it).
func genericEvent(line []byte) (event.Event, error) {
	var rec jsonRecord
	ev := event.New()
	if err := unmarshalLine(line, &rec); err != nil {
		return ev, err
	}
	if err := rec.restoreBytes(); err != nil {
		return ev, err
	}
	if rec.Type != "event" {
		return ev, fmt.Errorf("type %q, not an event", rec.Type)
	}
	err := rec.event(&ev)
	return ev, err
}

// checkLine decodes line with the fast decoder (twice, the second time
// from its warm caches) and, when it accepts, checks that the generic path
// accepts the line with the identical event. It reports whether the fast
// decoder accepted.
func checkLine(t *testing.T, d *eventDecoder, line []byte) bool {
	t.Helper()
	var fast event.Event
	if !d.event(line, &fast) {
		var again event.Event
		if d.event(line, &again) {
			t.Fatalf("declined, then accepted %q", line)
		}
		return false
	}
	var again event.Event
	if !d.event(line, &again) || again != fast {
		t.Fatalf("second decoding differs for %q:\n%+v\n%+v", line, fast, again)
	}
	gen, err := genericEvent(line)
	if err != nil {
		t.Fatalf("fast decoder accepted a line the generic path rejects (%v): %q\nfast: %+v", err, line, fast)
	}
	if gen != fast {
		t.Fatalf("fast and generic decoders differ on %q:\nfast:    %+v\ngeneric: %+v", line, fast, gen)
	}
	return true
}

// checkPlain: a line plainEventLine lets the fact pre-pass skip is not a
// fact, nor any other type, for the generic path.
func checkPlain(t *testing.T, line []byte) {
	t.Helper()
	text := bytes.TrimSpace(line)
	if !plainEventLine(text) {
		return
	}
	var rec jsonRecord
	if err := unmarshalLine(text, &rec); err == nil && rec.Type != "event" {
		t.Fatalf("plainEventLine skips a line of type %q: %q", rec.Type, line)
	}
}

// disguisedFacts begin as the writer begins event lines but are facts for
// go-json (the last of repeated keys counts; keys match in any case).
var disguisedFacts = []string{
	`{"type":"event","type":"fact","kind":"device","dev":"8:0","name":"sda"}`,
	`{"type":"event","TYPE":"fact","kind":"device","dev":"8:0","name":"sda"}`,
	`{"type":"event" ,"tyPe":"fact","kind":"device","dev":"8:0","name":"sda"}`,
	`{"type":"event","typ\u0065":"fact","kind":"device","dev":"8:0","name":"sda"}`,
	`{"type":"event","path":"\"type\"","Type" : "fact","kind":"device","dev":"8:0","name":"sda"}`,
}

// TestPlainEventLine: the writer's event lines are skipped by the fact
// pre-pass; lines that are facts for go-json are not.
func TestPlainEventLine(t *testing.T) {
	lines := writerEventLines(t)
	plain := 0
	for _, l := range lines {
		checkPlain(t, l)
		if plainEventLine(l) {
			plain++
		}
	}
	if plain < len(lines)*9/10 {
		t.Errorf("only %d of %d writer event lines are plain", plain, len(lines))
	}
	for _, l := range disguisedFacts {
		var rec jsonRecord
		if err := unmarshalLine([]byte(l), &rec); err != nil || rec.Type != "fact" {
			t.Fatalf("%s: type %q, %v; the test needs a fact", l, rec.Type, err)
		}
		if plainEventLine([]byte(l)) {
			t.Errorf("a fact is taken for a plain event line: %s", l)
		}
	}
	for _, l := range []struct {
		line  string
		plain bool
	}{
		{`{"type":"event","path":"/usr/share/type","id":1}`, true},
		{`{"type":"event","path":"type","id":1}`, false}, // a value, but the test stays simple
		{`{"type":"event","path":"/a/\"x\"","id":1}`, false},
		{`{"type":"fact","kind":"device"}`, false},
		{`{"type":"eventful","id":1}`, false},
	} {
		if plainEventLine([]byte(l.line)) != l.plain {
			t.Errorf("plainEventLine %v, want %v: %s", !l.plain, l.plain, l.line)
		}
	}
}

// FuzzJSONLEventLine is the differential test of the fast event decoder:
// on any line it accepts, the generic go-json path must accept the line
// and produce the identical event. It also checks that a line the fact
// pre-pass skips (plainEventLine) is not a fact for the generic path. A line it declines is decoded by the
// generic path in the reader, so there the two cannot disagree.
func FuzzJSONLEventLine(f *testing.F) {
	for _, l := range writerEventLines(f) {
		f.Add(l)
	}
	for _, l := range trickyLines {
		f.Add([]byte(l.line))
	}
	for _, l := range disguisedFacts {
		f.Add([]byte(l))
	}
	d := newEventDecoder()
	f.Fuzz(func(t *testing.T, line []byte) {
		checkLine(t, d, line)
		checkLine(t, newEventDecoder(), line)
		checkPlain(t, line)
	})
}

// writerEventLines returns the event lines the writer produces for the
// synthetic traces: every field, both OSes, names that are not UTF-8 or
// hold quotes, control characters and astral-plane letters.
func writerEventLines(t testing.TB) [][]byte {
	var buf bytes.Buffer
	for _, tr := range []*synth.Recorded{
		synth.AllFieldsTrace(),
		synth.Trace(synth.Options{Events: 3000, Seed: 1}),
		synth.Trace(synth.Options{OS: "windows", Events: 3000, Seed: 2}),
	} {
		if err := tr.Replay(NewJSONL(&buf)); err != nil {
			t.Fatal(err)
		}
	}
	w := NewJSONL(&buf)
	h := event.Header{OS: "linux"}
	must(t, w.Begin(&h))
	for i, s := range []string{"/tmp/caf\xe9-\xff.log", "a\"b\\c\x01\x1f\x7f", "snow ☃ and 𝄞 \U0010ffff", "tab\tnl\nret\r", "<script>&"} {
		e := event.New()
		e.ID, e.Layer, e.Op, e.Status, e.Pid, e.Comm, e.Path, e.Path2, e.Note, e.Native = uint64(i+1), event.LayerFile, event.OpRename, event.StatusOK, 1, s, s, s+"2", s, s
		must(t, w.Event(&e))
	}
	must(t, w.End(&event.Trailer{}))
	var lines [][]byte
	for _, l := range bytes.Split(buf.Bytes(), []byte("\n")) {
		if bytes.HasPrefix(l, eventLinePrefix) {
			lines = append(lines, l)
		}
	}
	return lines
}

// trickyLines: JSON the writer does not produce but a hand-edited or
// other tool's file may hold; accept says whether the fast decoder takes
// the line itself (else the generic path decides).
var trickyLines = []struct {
	line   string
	accept bool
}{
	{`{"type":"event","id":1,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, true},
	{` { "type" : "event" , "id" : 1 , "op" : "read" , "layer":"file","source":"ebpf","status":"ok" } `, true},
	{`{"type":"ev\u0065nt","id":2,"source":"ebpf","layer":"file","op":"read","status":"ok","path":"\/a\u00e9\ud834\udd1e\n"}`, true},
	{`{"type":"event","id":3,"source":"ebpf","layer":"file","op":"read","status":"ok","error":"EIO","dev_name":"sda","x":{"a":[1,-2.5e+3,true,false,null,{"b":"\""}]}}`, true},
	{`{"type":"event","id":4,"source":"ebpf","layer":"file","op":"read","status":"ok","path":"x","path_b64":"/w=="}`, true},
	{`{"type":"event","id":5,"source":"etl-file","layer":"file","op":"read","status":"ok","file_key":"0xFFFFFFFFFFFFFFFF","request":12}`, true},
	{`{"type":"event","id":6,"source":"ebpf","layer":"unknown","op":"READ","status":"ok","flags":[],"dev":"disk1"}`, true},
	{`{"type":"event","id":7,"source":"ebpf","layer":"file","op":"read","status":"ok","fd":-2147483648,"offset":-9223372036854775808}`, true},
	{`{"type":"event","ID":1,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":1,"id":2,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":1,"fd":null,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":1,"time":-0,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":1.0,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":01,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":18446744073709551616,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":1,"priority":256,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":1,"path":"\ud834","source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{"{\"type\":\"event\",\"id\":1,\"path\":\"\xff\",\"source\":\"ebpf\",\"layer\":\"file\",\"op\":\"read\",\"status\":\"ok\"}", false},
	{`{"type":"event","id":1,"path_b64":"!!","source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":1,"name":"x","source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
	{`{"type":"event","id":1,"source":"ebpf","layer":"file","op":"nope","status":"ok"}`, false},
	{`{"type":"event","id":1,"source":"ebpf","layer":"file","op":"read","status":"ok","flags":["nope"]}`, false},
	{`{"type":"event","id":1,"source":"ebpf","layer":"file","op":"read","status":"ok","x":[1,]}`, false},
	{`{"type":"event","id":1,"source":"ebpf","layer":"file","op":"read","status":"ok"} x`, false},
	{`{"type":"event","id":1,"source":"ebpf","layer":"file","op":"read","status":"ok"`, false},
	{`{"type":"event","id":1,"source":"ebpf","layer":"file","op":"read","status":"ok","file_key":"0x"}`, false},
	{`{"type":"fact","kind":"name"}`, false},
	{`{"id":1,"source":"ebpf","layer":"file","op":"read","status":"ok"}`, false},
}

// TestEventDecoderTakesWriterLines: every event line the writer produces
// is decoded by the fast decoder (the generic path is only the fallback),
// identically to the generic path.
func TestEventDecoderTakesWriterLines(t *testing.T) {
	d := newEventDecoder()
	lines := writerEventLines(t)
	for _, l := range lines {
		if !checkLine(t, d, l) {
			t.Errorf("fast decoder declines a line the writer wrote: %q", l)
		}
	}
	if len(lines) < 6000 {
		t.Fatalf("only %d event lines", len(lines))
	}
}

// TestEventDecoderTrickyLines: JSON beyond what the writer writes is either
// decoded the same as the generic path, or declined.
func TestEventDecoderTrickyLines(t *testing.T) {
	d := newEventDecoder()
	for _, l := range trickyLines {
		if got := checkLine(t, d, []byte(l.line)); got != l.accept {
			t.Errorf("fast decoder accepts %v, want %v: %s", got, l.accept, l.line)
		}
	}
}

// TestJSONLFastAndGenericReadersAgree reads whole traces, intact and
// damaged, with and without the fast decoder: the same trace is delivered
// and the same error returned.
func TestJSONLFastAndGenericReadersAgree(t *testing.T) {
	var buf bytes.Buffer
	if err := synth.Trace(synth.Options{Events: 2000, Seed: 4}).Replay(NewJSONL(&buf)); err != nil {
		t.Fatal(err)
	}
	intact := buf.String()
	lines := strings.SplitAfter(intact, "\n")
	damaged := strings.Join(lines[:50], "") + lines[49] + `{"type":"event","id":1,"op"` + "\n" +
		strings.Replace(strings.Join(lines[50:], ""), `"status":"ok"`, `"status":"maybe"`, 3)
	for name, in := range map[string]string{"intact": intact, "damaged": damaged, "truncated": intact[:len(intact)/2]} {
		fast, generic := synth.NewRecorder(), synth.NewRecorder()
		errF := readJSONL(context.Background(), strings.NewReader(in), "t", fast, readFast)
		errG := readJSONL(context.Background(), strings.NewReader(in), "t", generic, readGeneric)
		if fmt.Sprint(errF) != fmt.Sprint(errG) {
			t.Errorf("%s: fast reader: %v\ngeneric reader: %v", name, errF, errG)
		}
		if err := synth.Compare(generic.Trace(), fast.Trace()); err != nil {
			t.Errorf("%s: traces differ: %v", name, err)
		}
		if name == "damaged" && (errF == nil || !strings.Contains(errF.Error(), "3 more damaged lines")) {
			t.Errorf("damaged: %v", errF)
		}
	}
}

// TestRecentIDs: the repeated-ID window against a plain map model, over
// more IDs than the window holds (evictions, chains that leave the
// window), for IDs drawn at random with many repeats, counting up, with
// eBPF's CPU and kind bits, and chosen to collide in the first hash (which
// must switch the table to the second).
func TestRecentIDs(t *testing.T) {
	for _, g := range []struct {
		name    string
		id      func(rnd uint64, line int) uint64
		rehash  bool
		repeats bool
	}{
		{"random", func(rnd uint64, _ int) uint64 { return rnd >> 45 }, false, true},
		{"counting", func(_ uint64, line int) uint64 { return uint64(line) }, false, false},
		{"counting with repeats", func(rnd uint64, line int) uint64 { return uint64(line) - rnd>>47 }, false, true},
		{"ebpf", func(rnd uint64, line int) uint64 { return (uint64(line)<<12|rnd>>62)<<2 | 1 }, false, false},
		{"colliding", func(rnd uint64, line int) uint64 { k := uint64(line) % (1 << 14); return k<<14 | k }, true, true},
	} {
		var r recentIDs
		model := map[uint64]int{}
		var order []uint64
		rnd := uint64(1)
		dups := 0
		for line := 1; line <= 5*recentIDWindow; line++ {
			rnd = rnd*6364136223846793005 + 1442695040888963407
			id := g.id(rnd, line)
			first, dup := r.seen(id, 0, line)
			want, wantDup := model[id]
			if dup != wantDup || (dup && first != want) {
				t.Fatalf("%s: line %d id %d: seen %d %v, want %d %v", g.name, line, id, first, dup, want, wantDup)
			}
			if dup {
				dups++
				continue
			}
			model[id] = line
			order = append(order, id)
			if len(order) > recentIDWindow {
				delete(model, order[0])
				order = order[1:]
			}
		}
		if (dups > 0) != g.repeats {
			t.Errorf("%s: %d repeats", g.name, dups)
		}
		if (r.mult != 0) != g.rehash {
			t.Errorf("%s: multiplicative hash %v, want %v", g.name, r.mult != 0, g.rehash)
		}
	}
}

// BenchmarkRecentIDs: the repeated-line check per event, for IDs that
// count up (synthetic and ETW traces) and eBPF IDs (a sequence above CPU
// and kind bits, CPUs interleaved).
func BenchmarkRecentIDs(b *testing.B) {
	for _, g := range []struct {
		name string
		id   func(i uint64) uint64
	}{
		{"counting", func(i uint64) uint64 { return i + 1 }},
		{"ebpf", func(i uint64) uint64 { return ((i/4)<<12|i%4)<<2 | 1 }},
	} {
		b.Run(g.name, func(b *testing.B) {
			var r recentIDs
			for i := range uint64(b.N) {
				if _, dup := r.seen(g.id(i), 0, int(i)); dup {
					b.Fatal("repeat")
				}
			}
		})
	}
}

// TestRecentIDsSameIDOtherLine: a line repeated is a repeat; another line
// with the same event id is another event (old traces gave one id to
// several events).
func TestRecentIDsSameIDOtherLine(t *testing.T) {
	var r recentIDs
	if _, dup := r.seen(7, 1, 1); dup {
		t.Fatal("first line a repeat")
	}
	if _, dup := r.seen(7, 2, 2); dup {
		t.Error("another line of the same id taken for a repeat")
	}
	if first, dup := r.seen(7, 2, 3); !dup || first != 2 {
		t.Errorf("line 2 again: %d %v, want a repeat of line 2", first, dup)
	}
	if first, dup := r.seen(7, 1, 4); !dup || first != 1 {
		t.Errorf("line 1 again: %d %v, want a repeat of line 1", first, dup)
	}
}
