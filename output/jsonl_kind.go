package output

import "bytes"

// jsonlTrailerPrefix is how iotrace's writer begins a trailer line.
const jsonlTrailerPrefix = `{"type":"trailer"`

// JSONLLineKind is what a jsonl line is, as far as finding where a trace
// begins and ends needs to know.
type JSONLLineKind int

// The kinds of jsonl lines.
const (
	JSONLBlank   JSONLLineKind = iota // only spaces
	JSONLHeader                       // a header object
	JSONLTrailer                      // a trailer object
	JSONLOther                        // anything else
)

// ClassifyJSONLLine says what one line of a jsonl trace is (its end of
// line, if any, included). iotrace's own lines are known by their first
// bytes (JSONLMagic, the trailer's `{"type":"trailer"`) after spaces;
// any other line that holds the word "header" or "trailer" in quotes is
// decoded as the reader decodes it (go-json: any spacing and key order,
// keys in any letter case, the last of repeated keys), so that a trace
// written by another tool (Python's json.dumps, a hand edit) is found too.
// A trailer whose type is spelled with escapes ("\u0074railer") is not
// one here; the reader still reads it.
func ClassifyJSONLLine(line []byte) JSONLLineKind {
	t := bytes.TrimSpace(line)
	switch {
	case len(t) == 0:
		return JSONLBlank
	case bytes.HasPrefix(t, []byte(JSONLMagic)):
		return JSONLHeader
	case bytes.HasPrefix(t, []byte(jsonlTrailerPrefix)):
		return JSONLTrailer
	case t[0] != '{':
		return JSONLOther
	}
	hasHeader := bytes.Contains(t, []byte(`header"`))
	if !hasHeader && !bytes.Contains(t, []byte(`trailer"`)) {
		return JSONLOther
	}
	switch typ, ok := jsonlLineType(t); {
	case !ok:
		return JSONLOther
	case typ == "header" && hasHeader:
		return JSONLHeader
	case typ == "trailer":
		return JSONLTrailer
	}
	return JSONLOther
}

// jsonlLineType decodes the "type" of one line as the generic reader
// does; ok is false when the line is not a JSON object go-json accepts.
func jsonlLineType(text []byte) (typ string, ok bool) {
	var rec struct {
		Type string `json:"type"`
	}
	if err := unmarshalGuarded(text, &rec); err != nil {
		return "", false
	}
	return rec.Type, true
}

// MaybeJSONL reports whether a file beginning with head (its first bytes,
// perhaps not a whole line) may be a jsonl trace: its first line, after
// spaces, begins with JSONLMagic, or is a JSON object whose "type" is
// "header", or is cut off in head after an opening brace and a key's quote. The
// reader says what is wrong with a file this lets through.
func MaybeJSONL(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	if bytes.HasPrefix(t, []byte(JSONLMagic)) {
		return true
	}
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	if i := bytes.IndexByte(t, '\n'); i >= 0 {
		return ClassifyJSONLLine(t[:i]) == JSONLHeader
	}
	if _, ok := jsonlLineType(t); ok {
		return ClassifyJSONLLine(t) == JSONLHeader
	}
	// The first line goes on past head: an object that begins with a
	// key (no format iotrace reads begins so).
	k := bytes.TrimLeft(t[1:], " \t\r")
	return len(k) == 0 || k[0] == '"'
}
