package jsonenc

import (
	"encoding/json"
	"testing"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `C:\Windows\a "b"`, "tab\tnl\ncr\r\x01\x1f", "ünï", "bad\xffutf8"} {
		var back string
		got := AppendString(nil, s)
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q encodes to invalid JSON %s: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("%q round-trips to %q, encoding/json gives %q", s, back, wantBack)
		}
	}
}
