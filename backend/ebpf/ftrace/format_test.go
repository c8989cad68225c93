package ftrace

import (
	"os"
	"testing"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParseFormat: Linux 6.18's block_rq_complete format.
func TestParseFormat(t *testing.T) {
	f, err := ParseFormat(readTestdata(t, "block_rq_complete.format"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "block_rq_complete" || f.ID == 0 {
		t.Errorf("name %q id %d", f.Name, f.ID)
	}
	for _, want := range []Field{
		{Name: "common_type", Type: "unsigned short", Offset: 0, Size: 2},
		{Name: "common_pid", Type: "int", Offset: 4, Size: 4, Signed: true},
		{Name: "dev", Type: "dev_t", Offset: 8, Size: 4},
		{Name: "sector", Type: "sector_t", Offset: 16, Size: 8},
		{Name: "nr_sector", Type: "unsigned int", Offset: 24, Size: 4},
		{Name: "error", Type: "int", Offset: 28, Size: 4, Signed: true},
		{Name: "rwbs", Type: "char", Offset: 34, Size: 10},
		{Name: "cmd", Type: "__data_loc char[]", Offset: 44, Size: 4},
	} {
		got, ok := f.Field(want.Name)
		if !ok || got != want {
			t.Errorf("field %s = %+v, %v; want %+v", want.Name, got, ok, want)
		}
	}
}

func TestParseFormatErrors(t *testing.T) {
	for _, text := range []string{
		"name: x\n",   // no ID
		"ID: 70000\n", // beyond 16 bits
		"ID: 1\n\tfield:int a;\toffset:x;\tsize:4;\n", // bad offset
		"ID: 1\n\tfield:int a;\tsize:4;\n",            // no offset
		"ID: 1\n\tfield:a;\toffset:0;\tsize:4;\n",     // no type
	} {
		if f, err := ParseFormat(text); err == nil {
			t.Errorf("ParseFormat(%q) = %+v, want an error", text, f)
		}
	}
}

func TestParsePageHeader(t *testing.T) {
	h, err := ParsePageHeader(readTestdata(t, "header_page"))
	if err != nil {
		t.Fatal(err)
	}
	if h != (PageHeader{TimestampOffset: 0, CommitOffset: 8, CommitSize: 8, DataOffset: 16}) {
		t.Errorf("%+v", h)
	}
	if _, err := ParsePageHeader("field: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"); err == nil {
		t.Error("a header without commit and data parsed")
	}
}

func TestFieldValues(t *testing.T) {
	rec := []byte{0xfe, 0xff, 0xff, 0xff, 1, 2}
	i4 := Field{Offset: 0, Size: 4, Signed: true}
	if v, ok := i4.Int(rec); !ok || v != -2 {
		t.Errorf("Int = %d, %v", v, ok)
	}
	if _, ok := (Field{Offset: 4, Size: 4}).Uint(rec); ok {
		t.Error("a field past the record read")
	}
	if _, ok := (Field{Offset: 0, Size: 3}).Uint(rec); ok {
		t.Error("a 3-byte integer read")
	}
	if b := (Field{Offset: 4, Size: 2}).Bytes(rec); string(b) != "\x01\x02" {
		t.Errorf("Bytes = %q", b)
	}
}

func FuzzParseFormat(f *testing.F) {
	f.Add(readTestdata(f, "block_rq_complete.format"))
	f.Add(readTestdata(f, "header_page"))
	f.Fuzz(func(t *testing.T, text string) {
		fm, err := ParseFormat(text)
		if err != nil {
			return
		}
		rec := make([]byte, 64)
		for _, fd := range fm.Fields {
			fd.Uint(rec)
			fd.Int(rec)
			fd.Bytes(rec)
		}
		_, _ = ParsePageHeader(text)
	})
}

func TestStalePid(t *testing.T) {
	for _, c := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"iotrace-123", 123, true},
		{"iotrace-123-blk4", 123, true},
		{"iotrace-missed-55", 0, false},
		{"iotrace-0", 0, false},
		{"iotrace-+12", 0, false},
		{"iotrace-012", 0, false},
		{"other-12", 0, false},
		{"iotrace", 0, false},
	} {
		pid, ok := StalePid(c.name, "iotrace")
		if pid != c.pid || ok != c.ok {
			t.Errorf("StalePid(%q) = %d, %v; want %d, %v", c.name, pid, ok, c.pid, c.ok)
		}
	}
}
