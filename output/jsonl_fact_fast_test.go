package output

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// genericFact decodes line as the generic path does.
func genericFact(line []byte) (event.Fact, error) {
	var rec jsonRecord
	var f event.Fact
	if err := unmarshalLine(line, &rec); err != nil {
		return f, err
	}
	if err := rec.restoreBytes(); err != nil {
		return f, err
	}
	if rec.Type != "fact" {
		return f, fmt.Errorf("type %q, not a fact", rec.Type)
	}
	err := rec.fact(&f)
	return f, err
}

// checkFactLine decodes line with the fast fact decoder (twice) and, when
// it accepts, checks that the generic path accepts the line with the
// identical fact. It reports whether the fast decoder accepted.
func checkFactLine(t *testing.T, d *eventDecoder, line []byte) bool {
	t.Helper()
	var fast, again event.Fact
	if !d.fact(line, &fast) {
		if d.fact(line, &again) {
			t.Fatalf("declined, then accepted %q", line)
		}
		return false
	}
	if !d.fact(line, &again) || !reflect.DeepEqual(again, fast) {
		t.Fatalf("second decoding differs for %q:\n%+v\n%+v", line, fast, again)
	}
	gen, err := genericFact(line)
	if err != nil {
		t.Fatalf("fast decoder accepted a line the generic path rejects (%v): %q\nfast: %+v", err, line, fast)
	}
	if !reflect.DeepEqual(gen, fast) {
		t.Fatalf("fast and generic decoders differ on %q:\nfast:    %#v\ngeneric: %#v", line, fast, gen)
	}
	return true
}

// writerFactLines returns the fact lines the writer produces for the
// synthetic traces: every kind and field, stacks, both OSes.
func writerFactLines(t testing.TB) [][]byte {
	var buf bytes.Buffer
	for _, tr := range []*synth.Recorded{
		synth.AllFieldsTrace(),
		synth.StacksTrace(),
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
	for i, s := range []string{"/tmp/caf\xe9-\xff.log", "a\"b\\c\x01\x1f\x7f", "snow ☃ and 𝄞 \U0010ffff", "tab\tnl\nret\r"} {
		f := event.Fact{Kind: event.FactProcess, Pid: uint32(i + 1), Name: s, Image: s + "i", Detail: s + "d"}
		must(t, w.Fact(&f))
	}
	must(t, w.End(&event.Trailer{}))
	var lines [][]byte
	for _, l := range bytes.Split(buf.Bytes(), []byte("\n")) {
		if bytes.HasPrefix(l, factLinePrefix) {
			lines = append(lines, l)
		}
	}
	return lines
}

// trickyFactLines: JSON the writer does not write; accept says whether the
// fast decoder takes the line itself.
var trickyFactLines = []struct {
	line   string
	accept bool
}{
	{`{"type":"fact","kind":"process","pid":1,"name":"x"}`, true},
	{` { "type" : "fact" , "kind" : "name", "space":"fd", "handle":"0x1f", "flags":[], "kernel":[], "user":[1,"0x2"] } `, true},
	{`{"type":"fact","kind":"process","pid":1,"x":{"a":[1,-2.5e+3,true,false,null]}}`, true},
	{`{"type":"fact","kind":"process","pid":1,"rundown":true,"ended":false}`, true},
	{`{"type":"fact","kind":"process","pid":1,"id":3}`, false},       // an event's key
	{`{"type":"fact","kind":"process","pid":1,"Pid":2}`, false},      // case
	{`{"type":"fact","kind":"process","pid":1,"pid":2}`, false},      // repeated
	{`{"type":"fact","kind":"process","pid":4294967296}`, false},     // range
	{`{"type":"fact","kind":"process","handle":"0x"}`, false},        // bad hex
	{`{"type":"fact","kind":"process","handle":"010"}`, false},       // octal for ParseUint
	{`{"type":"fact","kind":"nonesuch"}`, false},                     // unknown kind
	{`{"type":"fact","space":"fd"}`, false},                          // no kind
	{`{"type":"fact","kind":"name","space":"nonesuch"}`, false},      // unknown space
	{`{"type":"fact","kind":"process","name_b64":"!!"}`, false},      // bad base64
	{`{"type":"fact","kind":"process","rundown":1}`, false},          // not a bool
	{`{"type":"fact","kind":"process","kernel":null}`, false},        // null
	{`{"type":"fact","kind":"process","flags":["nonesuch"]}`, false}, // unknown flag
	{`{"type":"fact","kind":"process","pid":1} x`, false},            // trailing bytes
	{`{"type":"fact","type":"event","kind":"process"}`, false},       // retyped
	{`{"type":"fact","kind":"process","path_b64":"eA=="}`, false},    // an event's key
}

// TestFactDecoderTakesWriterLines: every fact line the writer produces is
// decoded by the fast decoder, identically to the generic path.
func TestFactDecoderTakesWriterLines(t *testing.T) {
	d := newEventDecoder()
	lines := writerFactLines(t)
	kinds := map[event.FactKind]bool{}
	for _, l := range lines {
		if !checkFactLine(t, d, l) {
			t.Errorf("fast decoder declines a fact line the writer wrote: %q", l)
		}
		f, _ := genericFact(l)
		kinds[f.Kind] = true
	}
	if len(lines) < 500 || len(kinds) < 8 {
		t.Fatalf("only %d fact lines of %d kinds", len(lines), len(kinds))
	}
}

// TestFactDecoderTrickyLines: JSON beyond what the writer writes is either
// decoded the same as the generic path, or declined.
func TestFactDecoderTrickyLines(t *testing.T) {
	d := newEventDecoder()
	for _, l := range trickyFactLines {
		if got := checkFactLine(t, d, []byte(l.line)); got != l.accept {
			t.Errorf("fast decoder accepts %v, want %v: %s", got, l.accept, l.line)
		}
	}
}

// FuzzJSONLFactLine is the differential test of the fast fact decoder: on
// any line it accepts, the generic go-json path must accept the line and
// produce the identical fact.
func FuzzJSONLFactLine(f *testing.F) {
	for _, l := range writerFactLines(f) {
		f.Add(l)
	}
	for _, l := range trickyFactLines {
		f.Add([]byte(l.line))
	}
	d := newEventDecoder()
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFactLine(t, d, line)
		checkFactLine(t, newEventDecoder(), line)
	})
}
