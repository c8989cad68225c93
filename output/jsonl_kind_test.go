package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzClassifyJSONLLine checks the line classifier against
// encoding/json: a line taken for a header or trailer (other than by
// iotrace's own first bytes) is a JSON object whose "type" is that; a
// JSON object with such a type that spells it without escapes is taken
// for one; MaybeJSONL agrees on a whole first line.
func FuzzClassifyJSONLLine(f *testing.F) {
	f.Add([]byte(`{"type": "header", "os": "linux"}`))
	f.Add([]byte(`{"end": 1, "type": "trailer"}` + "\r\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		kind := ClassifyJSONLLine(line)
		text := bytes.TrimSpace(line)
		own := bytes.HasPrefix(text, []byte(JSONLMagic)) || bytes.HasPrefix(text, []byte(jsonlTrailerPrefix))
		var obj map[string]any
		isObj := json.Unmarshal(text, &obj) == nil && obj != nil
		typ := ""
		if isObj {
			// go-json, like encoding/json into a struct, takes the last
			// key that matches "type" in any letter case.
			for _, k := range lastKeys(text) {
				if strings.EqualFold(k, "type") {
					typ, _ = obj[k].(string)
				}
			}
		}
		switch {
		case len(text) == 0:
			if kind != JSONLBlank {
				t.Fatalf("blank line taken for %d", kind)
			}
		case own:
		case kind == JSONLHeader && typ != "header", kind == JSONLTrailer && typ != "trailer":
			if isObj {
				t.Fatalf("%q taken for kind %d; its type is %q", line, kind, typ)
			}
		case kind == JSONLOther && isObj && typ == "header" && bytes.Contains(text, []byte(`"header"`)):
			t.Fatalf("%q is a header object", line)
		case kind == JSONLOther && isObj && typ == "trailer" && bytes.Contains(text, []byte(`"trailer"`)):
			t.Fatalf("%q is a trailer object", line)
		}
		if !bytes.ContainsAny(line, "\n") && len(text) > 0 {
			if got := MaybeJSONL(append(bytes.Clone(line), '\n')); got != (kind == JSONLHeader) {
				t.Fatalf("MaybeJSONL %v, classified %d: %q", got, kind, line)
			}
		}
	})
}

// lastKeys returns the top-level keys of the JSON object text in order
// (encoding/json's map keeps the last value of a repeated key).
func lastKeys(text []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(text))
	var keys []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}
