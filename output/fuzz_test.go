package output

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// FuzzReadJSONL feeds arbitrary bytes to the jsonl reader: it must never
// panic, must read the same trace and return the same error with the
// schema decoder as with go-json for every line, must deliver the same
// facts to the fact pre-pass (ScanJSONLFacts, which skips plain event
// lines), must end every stream it began, and what it reads must survive
// being written and read again unchanged.
func FuzzReadJSONL(f *testing.F) {
	var buf bytes.Buffer
	if err := synth.AllFieldsTrace().Replay(NewJSONL(&buf)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	buf.Reset()
	if err := synth.StacksTrace().Replay(NewJSONL(&buf)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(JSONLMagic + `,"source":"ebpf"}` + "\n" + `{"type":"event","id":1,"source":"ebpf","layer":"file","op":"read","status":"ok","file_key":"0x10","fd":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		first := synth.NewRecorder()
		err := ReadJSONL(context.Background(), bytes.NewReader(data), "fuzz", first)
		tr := first.Trace()
		generic := synth.NewRecorder()
		errG := readJSONL(context.Background(), bytes.NewReader(data), "fuzz", generic, readGeneric)
		if fmt.Sprint(err) != fmt.Sprint(errG) {
			t.Fatalf("schema decoder: %v\ngo-json only: %v", err, errG)
		}
		if err := synth.Compare(generic.Trace(), tr); err != nil {
			t.Fatalf("schema decoder and go-json only read different traces: %v", err)
		}
		// In memory (a mapped file): the same trace and error, whatever
		// the copy holds after the read (nothing may point into it).
		mem := synth.NewRecorder()
		cp := bytes.Clone(data)
		released := 0
		errM := ReadJSONLBytes(context.Background(), cp, "fuzz", mem, func(upto int) { released = upto })
		for i := range cp {
			cp[i] = 'x'
		}
		if fmt.Sprint(err) != fmt.Sprint(errM) || released > len(data) {
			t.Fatalf("from a reader: %v\nin memory: %v (released %d of %d)", err, errM, released, len(data))
		}
		if err := synth.Compare(tr, mem.Trace()); err != nil {
			t.Fatalf("from a reader and in memory, different traces: %v", err)
		}
		var facts, scanned []event.Fact
		_ = readJSONL(context.Background(), bytes.NewReader(data), "fuzz", factFunc(func(f *event.Fact) error {
			facts = append(facts, *f)
			return nil
		}), readFast)
		errS := ScanJSONLFacts(context.Background(), bytes.NewReader(data), "fuzz", func(f *event.Fact) error {
			scanned = append(scanned, *f)
			return nil
		})
		if errS != nil {
			t.Fatalf("fact pre-pass: %v", errS)
		}
		var memFacts []event.Fact
		if err := ScanJSONLFactsBytes(context.Background(), data, "fuzz", func(f *event.Fact) error {
			memFacts = append(memFacts, *f)
			return nil
		}, nil); err != nil || !reflect.DeepEqual(memFacts, scanned) {
			t.Fatalf("the fact pre-pass in memory: %v, %d facts against %d", err, len(memFacts), len(scanned))
		}
		if !reflect.DeepEqual(facts, scanned) {
			t.Fatalf("the fact pre-pass delivers %d facts, the reader %d:\n%+v\n%+v", len(scanned), len(facts), scanned, facts)
		}
		if err != nil && strings.Contains(err.Error(), "synth.Recorder") {
			t.Fatalf("the reader breaks the sink's order: %v", err)
		}
		if tr.Began != tr.Ended {
			t.Fatalf("began %v, ended %v (err %v)", tr.Began, tr.Ended, err)
		}
		if !tr.Began {
			return
		}
		var again bytes.Buffer
		if err := tr.Replay(NewJSONL(&again)); err != nil {
			t.Fatal(err)
		}
		second := synth.NewRecorder()
		if err := ReadJSONL(context.Background(), &again, "again", second); err != nil {
			t.Fatalf("re-reading what was read: %v\n%s", err, again.Bytes())
		}
		if err := synth.Compare(tr, second.Trace()); err != nil {
			t.Fatalf("not stable through a second round trip: %v", err)
		}
	})
}
