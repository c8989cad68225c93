package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// spoil appends hostile bytes to every non-empty string reachable from v
// except layer names, which choose the sections drawn.
func spoil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			spoil(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Name != "Layer" && v.Type().Field(i).IsExported() {
				spoil(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			spoil(v.Index(i))
		}
	case reflect.String:
		if v.String() != "" {
			v.SetString(v.String() + "\x1b]0;PWN\x07\xff\u009b")
		}
	}
}

// TestTextEscapesEveryString: every string of a result (from the trace,
// or from the JSON of merged reports) reaches the text by the terminal
// rule, the merged report's host table included.
func TestTextEscapesEveryString(t *testing.T) {
	b := knownTrace()
	r := New(Options{TopN: 5})
	var tr event.Trailer
	tr.End = 2_000_000
	tr.Stats.Add(event.CountLost, "ringbuf reserve failed", 7)
	b.run(t, r, tr)
	one := r.Result()
	var parts []*Result
	for _, host := range []string{"web1", "web2"} {
		h := hostTrace(t, 1, host, "linux", 2000)
		r := New(Options{})
		if err := h.Replay(r); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, r.Result())
	}
	merged, err := Merge(parts, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []*Result{one, merged} {
		spoil(reflect.ValueOf(res))
		var out bytes.Buffer
		if err := res.WriteText(&out, TextOptions{AllHistograms: true}); err != nil {
			t.Fatal(err)
		}
		if i := strings.IndexAny(out.String(), "\x1b\x07\u009b"); i >= 0 || !strings.Contains(out.String(), "␛]0;PWN␇<0xFF><U+009B>") {
			t.Errorf("raw control at %d or no escaped string:\n%s", i, out.String())
		}
		if strings.Contains(out.String(), "\xff") {
			t.Errorf("invalid UTF-8 written")
		}
	}
}
