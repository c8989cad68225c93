package output

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestCSVInjection: text cells from the trace that a spreadsheet would
// evaluate as a formula (issue 25, item 8) start with a single quote;
// numbers, negative ones included, are written as they are.
func TestCSVInjection(t *testing.T) {
	var buf bytes.Buffer
	c := NewCSV(&buf, Options{})
	if err := c.Begin(&event.Header{OS: "linux"}); err != nil {
		t.Fatal(err)
	}
	c.Fact(&event.Fact{Kind: event.FactDevice, Dev: event.Device{Major: 8}, Name: "@dev"})
	e := event.New()
	e.ID, e.Time, e.Layer, e.Op, e.Native = 1, -1_500_000_000, event.LayerFile, event.OpRename, "+native"
	e.Comm, e.Path, e.Path2, e.Dev = "=cmd|' /C calc'!A0", "-2+3", "\t=1", event.Device{Major: 8}
	if err := c.Event(&e); err != nil {
		t.Fatal(err)
	}
	e.Comm, e.Path, e.Path2, e.Native = "\r=1", "=a,b", "plain", "write"
	if err := c.Event(&e); err != nil {
		t.Fatal(err)
	}
	c.End(&event.Trailer{})
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, n := range rows[0] {
		col[n] = i
	}
	want := []map[string]string{
		{"process": "'=cmd|' /C calc'!A0", "native": "'+native", "path": "'-2+3", "path2": "'\t=1", "device": "8:0 (@dev)", "time_s": "-1.500000000"},
		{"process": "'\r=1", "path": "'=a,b", "path2": "plain", "native": "write"},
	}
	for i, w := range want {
		for k, v := range w {
			if got := rows[i+1][col[k]]; got != v {
				t.Errorf("row %d %s = %q, want %q", i+1, k, got, v)
			}
		}
	}
}
