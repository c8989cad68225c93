package output

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// sample is a small trace: header, facts, a file read that caused a block
// read, a failed open, a marker, a rename with a quoted path, an
// unresolved handle and an event that never completed.
type sample struct {
	h       event.Header
	facts   []event.Fact
	events  []event.Event
	trailer event.Trailer
}

func linuxSample() sample {
	s := sample{
		h: event.Header{Source: event.SourceEBPF, OS: "linux", OSVersion: "6.18.0", Hostname: "box",
			CPUs: 2, PointerSize: 8, StartWall: 1741944413_000000000,
			Clock: event.Clock{Kind: event.ClockBoottime, Freq: 1e9, Origin: 12345}, Command: "make -j2", Tool: "iotrace test"},
		facts: []event.Fact{
			{Kind: event.FactDevice, Dev: event.Device{Major: 254}, Name: "vda", Rundown: true},
			{Kind: event.FactName, Space: event.SpaceFD, Pid: 100, Handle: 3, Name: "/etc/passwd", Time: 10_000},
			{Kind: event.FactProcess, Pid: 100, PPid: 1, Name: "cat", Image: "/usr/bin/cat", Detail: "cat /etc/passwd", ProcStart: -5, Rundown: true},
			{Kind: event.FactName, Space: event.SpaceFD, Pid: 100, Handle: 3, End: true, Time: 900_000},
		},
		trailer: event.Trailer{End: 2_000_000_000},
	}
	ev := func(mod func(e *event.Event)) event.Event {
		e := event.New()
		e.Source = event.SourceEBPF
		e.Pid, e.Tid, e.CPU, e.Comm = 100, 101, 1, "cat"
		mod(&e)
		return e
	}
	s.events = []event.Event{
		ev(func(e *event.Event) {
			e.ID, e.Layer, e.Op, e.Native = 1, event.LayerFile, event.OpOpen, "openat"
			e.Time, e.Duration, e.Path, e.FD = 5_000, 2_500, "/etc/passwd", 3
			e.Status, e.OpenFlags, e.Bytes = event.StatusOK, 0x80000, 3
		}),
		ev(func(e *event.Event) {
			e.ID, e.Layer, e.Op, e.Native = 2, event.LayerFile, event.OpRead, "pread64"
			e.Time, e.Duration, e.Path, e.FD = 10_000, 123_456, "/etc/passwd", 3
			e.Offset, e.Size, e.Bytes, e.Status = 0, 4096, 1234, event.StatusOK
			e.CausedIOs, e.CausedBytes, e.Inode, e.Dev = 1, 4096, 777, event.Device{Major: 254}
		}),
		ev(func(e *event.Event) {
			e.ID, e.Layer, e.Op, e.Native = 3, event.LayerBlock, event.OpBlockRead, "block_rq_complete"
			e.Time, e.Duration, e.Wait = 20_000, 100_000, 20_000
			e.Dev, e.Sector, e.Size, e.Bytes, e.Request, e.Cause = event.Device{Major: 254}, 2048, 4096, 4096, 0xffff888812345678, 2
			e.Status, e.Flags, e.Priority = event.StatusOK, event.FlagSync|event.FlagMeta, 2
		}),
		ev(func(e *event.Event) {
			e.ID, e.Layer, e.Op, e.Native = 4, event.LayerFile, event.OpOpen, "openat"
			e.Time, e.Duration, e.Path = 30_000, 1_000, "/no such/file"
			e.Status, e.Code, e.OpenFlags, e.Mode = event.StatusNotFound, 2, 0x241, 0o644
		}),
		ev(func(e *event.Event) {
			e.ID, e.Layer, e.Op, e.Note = 5, event.LayerMarker, event.OpMarker, "phase two"
			e.Time = 40_000
		}),
		ev(func(e *event.Event) {
			e.ID, e.Layer, e.Op, e.Native = 6, event.LayerFile, event.OpRename, "renameat2"
			e.Time, e.Duration, e.Path, e.Path2 = 50_000, 7_000, "/tmp/a", "/tmp/b\tc"
			e.Status = event.StatusOK
		}),
		ev(func(e *event.Event) {
			e.ID, e.Layer, e.Op, e.Native = 7, event.LayerFile, event.OpWrite, "write"
			e.Time, e.FD, e.Size = 60_000, 9, 100
			e.Flags = event.FlagNoCompletion
		}),
	}
	return s
}

func windowsSample() sample {
	s := sample{
		h: event.Header{Source: event.SourceETLFile, OS: "windows", OSVersion: "10.0.19045", CPUs: 8,
			PointerSize: 8, StartWall: 1741944413_000000000, Clock: event.Clock{Kind: event.ClockQPC, Freq: 10_000_000, Origin: 99}},
		trailer: event.Trailer{End: 1_000_000},
	}
	s.trailer.Stats.Add(event.CountInfo, "events received", 10)
	s.trailer.Stats.Add(event.CountLost, "buffers lost (ETW)", 3)
	s.trailer.Stats.Add(event.CountUnpaired, "FileIo/OpEnd without start", 2)
	e := event.New()
	e.ID, e.Source, e.Layer, e.Op, e.Native = 1, event.SourceETLFile, event.LayerFile, event.OpOpen, "FileIo/Create"
	e.Pid, e.Tid, e.Comm, e.Path = 4, 8, "System", `C:\Windows\system32\config\SYSTEM`
	e.FileObject, e.FileKey = 0xffffa001_12345678, 0xffffa001_87654321
	e.Disposition, e.OpenFlags, e.Mode = 1, 0x60, 3
	e.Status, e.Code = event.StatusDenied, 0xC0000022
	s.events = append(s.events, e)
	b := event.New()
	b.ID, b.Source, b.Layer, b.Op, b.Native = 2, event.SourceETLFile, event.LayerBlock, event.OpBlockWrite, "DiskIo/Write"
	b.Pid, b.Tid, b.CPU, b.Dev, b.Size, b.Sector, b.Request = 0, 0, 3, event.Device{Major: 1, IsDisk: true}, 65536, 100, 0xffff1
	b.Status, b.Flags, b.Duration, b.Time = event.StatusOK, event.FlagWriteback|event.FlagFUA, 3_000_000, 500
	s.events = append(s.events, b)
	return s
}

func (s sample) replay(t testing.TB, sink event.Sink) {
	t.Helper()
	h := s.h
	must(t, sink.Begin(&h))
	for i := range s.facts {
		f := s.facts[i]
		must(t, sink.Fact(&f))
	}
	for i := range s.events {
		e := s.events[i]
		must(t, sink.Event(&e))
	}
	tr := s.trailer
	must(t, sink.End(&tr))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func render(t *testing.T, format string, opts Options, s sample) string {
	t.Helper()
	var buf bytes.Buffer
	sink, err := New(format, &buf, opts)
	must(t, err)
	s.replay(t, sink)
	return buf.String()
}

func TestTextLinux(t *testing.T) {
	out := render(t, "text", Options{}, linuxSample())
	t.Log("\n" + out)
	lines := strings.Split(out, "\n")
	find := func(sub string) string {
		for _, l := range lines {
			if strings.Contains(l, sub) {
				return l
			}
		}
		t.Fatalf("no line contains %q", sub)
		return ""
	}
	for _, want := range []string{
		"# iotrace trace from ebpf: linux 6.18.0 on box, 2 CPUs",
		"# started 2025-03-14T09:26:53Z, clock boottime at 1000000000 Hz",
		"# command: make -j2",
	} {
		find(want)
	}
	read := find("pread64")
	for _, want := range []string{"0.000010", "#2", "cat[100/101]", "read", "4096", "1234", "123.4us", "/etc/passwd", "fd=3", "→ 1 I/O 4 KiB"} {
		if !strings.Contains(read, want) {
			t.Errorf("read line lacks %q: %s", want, read)
		}
	}
	blk := find("block_rq_complete")
	for _, want := range []string{"bread", "1048576", "dev=vda(254:0)", "sector=2048", "rwbs=RSM", "wait=20.0us", "svc=80.0us", "prio=2", "← #2"} {
		if !strings.Contains(blk, want) {
			t.Errorf("block line lacks %q: %s", want, blk)
		}
	}
	open := find(`"/no such/file"`)
	for _, want := range []string{"ENOENT", "flags=O_WRONLY|O_CREAT|O_TRUNC", "mode=0644"} {
		if !strings.Contains(open, want) {
			t.Errorf("failed open lacks %q: %s", want, open)
		}
	}
	find("flags=O_RDONLY|O_CLOEXEC")
	find("===== marker: phase two =====")
	find("/tmp/a → \"/tmp/b\u2409c\"")
	nc := find("#7 ")
	if !strings.Contains(nc, "<fd 9>") || !strings.Contains(nc, "no-completion") {
		t.Errorf("unresolved, uncompleted write: %s", nc)
	}
	find("# 7 events (file 5, block 1, marker 1) in 2.000000 s")
	find("# no events lost, unpaired, unresolved or dropped")

	// Columns line up: the op column starts at the same byte in every
	// event line.
	col := -1
	for _, l := range lines {
		if i := strings.Index(l, " cat[100/101]"); i >= 0 {
			if col >= 0 && i != col {
				t.Errorf("process column at %d, want %d: %q", i, col, l)
			}
			col = i
		}
	}
}

func TestTextWindowsAndProblems(t *testing.T) {
	out := render(t, "text", Options{WallClock: true}, windowsSample())
	t.Log("\n" + out)
	for _, want := range []string{
		"ACCESS_DENIED", "disposition=OPEN", "options=SYNCHRONOUS_IO_NONALERT|NON_DIRECTORY_FILE", "share=READ|WRITE",
		`C:\Windows\system32\config\SYSTEM`, "09:26:53.000000", "<idle>[0/0@cpu3]", "dev=disk1", "rwbs=WF", "[writeback]",
		"# PROBLEMS", "lost       buffers lost (ETW): 3", "unpaired   FileIo/OpEnd without start: 2", "events received: 10",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestTextWindowsPathQuoting: a Windows path reads as it is spelled, with
// single backslashes, unquoted without spaces and quoted with them; the
// jsonl output of the same events keeps its JSON escapes.
func TestTextWindowsPathQuoting(t *testing.T) {
	s := windowsSample()
	s.events[0].Path = `C:\Program Files\App "x"\lib.dll`
	s.facts = []event.Fact{{Kind: event.FactProcess, Pid: 4, Name: "app", Image: `C:\Windows\System32\svchost.exe`,
		Detail: `C:\Windows\system32\svchost.exe -k netsvcs`, Rundown: true}}
	out := render(t, "text", Options{Facts: true}, s)
	t.Log("\n" + out)
	for _, want := range []string{
		`  "C:\Program Files\App ""x""\lib.dll"`,
		` image=C:\Windows\System32\svchost.exe `,
		` detail="C:\Windows\system32\svchost.exe -k netsvcs"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %s", want)
		}
	}
	if strings.Contains(out, `\\`) {
		t.Errorf("text output doubles a backslash:\n%s", out)
	}
	js := render(t, "jsonl", Options{}, s)
	if !strings.Contains(js, `"C:\\Program Files\\App \"x\"\\lib.dll"`) {
		t.Errorf("jsonl path is not JSON-escaped:\n%s", js)
	}
}

func TestTextFacts(t *testing.T) {
	out := render(t, "text", Options{Facts: true}, linuxSample())
	for _, want := range []string{
		"# fact 0.000010 name fd 3 pid=100 → /etc/passwd",
		"# fact 0.000000 process pid=100 ppid=1 → cat image=/usr/bin/cat detail=\"cat /etc/passwd\" (rundown)",
		"# fact 0.000900 name fd 3 pid=100 (end)",
		"# fact 0.000000 device 254:0 → vda (rundown)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// recorder keeps copies of a stream for comparison.
type recorder struct {
	h       event.Header
	events  []event.Event
	facts   []event.Fact
	trailer event.Trailer
	ends    int
}

func (r *recorder) Begin(h *event.Header) error { r.h = *h; return nil }
func (r *recorder) Event(e *event.Event) error  { r.events = append(r.events, *e); return nil }
func (r *recorder) Fact(f *event.Fact) error    { r.facts = append(r.facts, *f); return nil }
func (r *recorder) End(t *event.Trailer) error  { r.trailer = *t; r.ends++; return nil }

func TestJSONLRoundTrip(t *testing.T) {
	for _, s := range []sample{linuxSample(), windowsSample()} {
		var buf bytes.Buffer
		s.replay(t, NewJSONL(&buf))
		var r recorder
		if err := ReadJSONL(context.Background(), bytes.NewReader(buf.Bytes()), "t.jsonl", &r); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.h, s.h) {
			t.Errorf("header: got %+v, want %+v", r.h, s.h)
		}
		if !reflect.DeepEqual(r.events, s.events) {
			for i := range s.events {
				if i < len(r.events) && !reflect.DeepEqual(r.events[i], s.events[i]) {
					t.Errorf("event %d:\n got %+v\nwant %+v", i, r.events[i], s.events[i])
				}
			}
			t.Fatalf("events differ (%d vs %d)", len(r.events), len(s.events))
		}
		if !reflect.DeepEqual(r.facts, s.facts) {
			t.Errorf("facts: got %+v, want %+v", r.facts, s.facts)
		}
		if !reflect.DeepEqual(r.trailer, s.trailer) || r.ends != 1 {
			t.Errorf("trailer: got %+v (%d ends), want %+v", r.trailer, r.ends, s.trailer)
		}
	}
}

func TestJSONLFieldNames(t *testing.T) {
	out := render(t, "jsonl", Options{}, linuxSample())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first, block, last map[string]any
	must(t, json.Unmarshal([]byte(lines[0]), &first))
	must(t, json.Unmarshal([]byte(lines[3]), &block))
	must(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	if first["type"] != "header" || first["start"] != "2025-03-14T09:26:53Z" || first["clock"] != "boottime" {
		t.Errorf("header: %v", first)
	}
	if block["type"] != "event" || block["op"] != "bread" || block["request"] != "0xffff888812345678" ||
		block["dev"] != "254:0" || block["dev_name"] != "vda" || block["cause"] != 2.0 {
		t.Errorf("block event: %v", block)
	}
	if _, ok := block["fd"]; ok {
		t.Errorf("fd -1 not omitted: %v", block)
	}
	if last["type"] != "trailer" || last["events"] != 7.0 {
		t.Errorf("trailer: %v", last)
	}
	if strings.Contains(out, `"type":"fact"`) {
		t.Error("facts written without Options.Facts")
	}
	if !strings.Contains(render(t, "jsonl", Options{Facts: true}, linuxSample()), `{"type":"fact","kind":"name","time":900000,"ended":true,"space":"fd","pid":100,"handle":3}`) {
		t.Error("fact object")
	}
	if !strings.Contains(out, `"status":"not-found","code":2,"error":"ENOENT"`) {
		t.Error("error name")
	}
}

func TestJSONLDamage(t *testing.T) {
	var buf bytes.Buffer
	linuxSample().replay(t, NewJSONL(&buf))
	full := buf.Bytes()
	lines := bytes.SplitAfter(full, []byte("\n"))
	// Cut in the middle of the 8th line (an event).
	cut := 0
	for _, l := range lines[:7] {
		cut += len(l)
	}
	var r recorder
	err := ReadJSONL(context.Background(), bytes.NewReader(full[:cut+10]), "t.jsonl", &r)
	if err == nil || !strings.Contains(err.Error(), "line 8") || !strings.Contains(err.Error(), "byte offset") {
		t.Fatalf("truncated: err = %v", err)
	}
	if r.ends != 1 || len(r.events)+len(r.facts) != 6 {
		t.Errorf("truncated: %d events, %d facts, %d ends; want 6 items and 1 end", len(r.events), len(r.facts), r.ends)
	}
	// Missing trailer only.
	r = recorder{}
	err = ReadJSONL(context.Background(), bytes.NewReader(full[:len(full)-len(lines[len(lines)-2])]), "t.jsonl", &r)
	if err == nil || !strings.Contains(err.Error(), "without a trailer") || r.ends != 1 {
		t.Errorf("no trailer: %v, ends %d", err, r.ends)
	}
	// Not a trace.
	err = ReadJSONL(context.Background(), strings.NewReader(`{"a":1}`+"\n"), "x.json", &recorder{})
	if err == nil || !strings.Contains(err.Error(), errNotJSONL) {
		t.Errorf("random json: %v", err)
	}
}

func TestCSV(t *testing.T) {
	s := linuxSample()
	out := render(t, "csv", Options{}, s)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	must(t, err)
	if !reflect.DeepEqual(rows[0], CSVColumns) {
		t.Fatalf("header row %v", rows[0])
	}
	if len(rows) != 1+len(s.events) {
		t.Fatalf("%d rows, want %d", len(rows), 1+len(s.events))
	}
	col := map[string]int{}
	for i, c := range CSVColumns {
		col[c] = i
	}
	for i, e := range s.events {
		row := rows[i+1]
		if row[col["id"]] != itoa(e.ID) || row[col["path"]] != e.Path || row[col["path2"]] != e.Path2 ||
			row[col["operation"]] != e.Op.String() || row[col["pid"]] != itoa(uint64(e.Pid)) ||
			row[col["duration_ns"]] != itoa(uint64(e.Duration)) || row[col["status"]] != e.Status.String() {
			t.Errorf("row %d = %v for event %+v", i, row, e)
		}
	}
	if r := rows[4]; r[col["result"]] != "ENOENT" || r[col["time_s"]] != "0.000030000" || r[col["time_of_day"]] != "2025-03-14T09:26:53.000030000Z" ||
		r[col["detail"]] != "flags=O_WRONLY|O_CREAT|O_TRUNC mode=0644" {
		t.Errorf("failed open row: %v", r)
	}
	if r := rows[3]; r[col["device"]] != "254:0 (vda)" || r[col["request"]] != "0xffff888812345678" || r[col["flags"]] != "sync|meta" || r[col["cause"]] != "2" {
		t.Errorf("block row: %v", r)
	}
}

func itoa(v uint64) string { return string(appendUint(nil, v)) }

func appendUint(b []byte, v uint64) []byte {
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

func TestNewUnknownFormat(t *testing.T) {
	_, err := New("xml", nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "csv, jsonl, text") {
		t.Errorf("err = %v", err)
	}
	if FormatForPath("a/b.JSONL") != "jsonl" || FormatForPath("x.csv") != "csv" || FormatForPath("x.iot") != "" {
		t.Error("FormatForPath")
	}
}

func TestHelpers(t *testing.T) {
	cases := []struct{ got, want string }{
		{string(appendDuration(nil, 850)), "850ns"},
		{string(appendDuration(nil, 12_345)), "12.3us"},
		{string(appendDuration(nil, 1_234_567)), "1.234ms"},
		{string(appendDuration(nil, 2_500_000_000)), "2.500s"},
		{string(appendSeconds(nil, -100_000)), "-0.000100"},
		{string(appendBytes(nil, 512)), "512 B"},
		{string(appendBytes(nil, 1536)), "1.5 KiB"},
		{string(appendBytes(nil, 3<<30)), "3 GiB"},
		{string(appendJSONString(nil, "a\"b\\c\n\x01\xffé")), `"a\"b\\c\n\u0001\ufffdé"`},
		{string(appendCSV(nil, `a,"b"`)), `"a,""b"""`},
		{string(appendPath(nil, "/a b")), `"/a b"`},
		{string(appendPath(nil, "/ok/é")), `/ok/é`},
		{string(appendPath(nil, `C:\Windows\x.dll`)), `C:\Windows\x.dll`},
		{string(appendPath(nil, `C:\a b\x.dll`)), `"C:\a b\x.dll"`},
		{string(appendPath(nil, `a"b\`)), `"a""b\"`},
		{string(appendPath(nil, "")), `""`},
		{string(appendPath(nil, "a\nb\x7f\x00")), "\"a\u240ab\u2421\u2400\""},
		{string(appendPath(nil, "l\xe9\u202etxt.exe")), `"l<0xE9><U+202E>txt.exe"`},
		{string(appendPath(nil, "x\u0085\U000e0001")), `"x<U+0085><U+E0001>"`},
		{string(appendLinuxOpenFlags(nil, 0x5110c2)), "O_RDWR|O_CREAT|O_EXCL|O_SYNC|O_TMPFILE"},
		{string(appendBits(nil, 0x80000001, winShare)), "READ|0x80000000"},
		{string(alignRight([]byte("ab"), 0, 5)), "   ab"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestTextIOUringOpcode: io_uring lines name the opcode (opcode=READ),
// not info=22; an opcode the backend does not name shows its number.
func TestTextIOUringOpcode(t *testing.T) {
	s := linuxSample()
	s.events = []event.Event{
		{ID: 1, Time: 10, Source: event.SourceEBPF, Layer: event.LayerFile, Op: event.OpRead, Native: "io_uring/READ",
			Info: 22, Pid: 100, Tid: 100, FD: 3, Path: "/etc/passwd", Size: 4096, Bytes: 4096, Status: event.StatusOK},
		{ID: 2, Time: 20, Source: event.SourceEBPF, Layer: event.LayerFile, Op: event.OpAsync, Native: "io_uring",
			Info: 99, Pid: 100, Tid: 100, FD: -1, Status: event.StatusOK},
	}
	out := render(t, "text", Options{}, s)
	if strings.Contains(out, "info=") {
		t.Errorf("io_uring line shows info=:\n%s", out)
	}
	for _, want := range []string{"opcode=READ", "opcode=99"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestTextFlushRWBS: a flush recorded as the kernel's empty preflush write
// shows the same rwbs as its NATIVE column (FWS), not FS.
func TestTextFlushRWBS(t *testing.T) {
	s := linuxSample()
	s.events = []event.Event{
		{ID: 1 | 1<<62, Time: 10, Source: event.SourceEBPF, Layer: event.LayerBlock, Op: event.OpBlockFlush, Native: "FWS",
			Flags: event.FlagPreflush | event.FlagSync, Dev: event.Device{Major: 254}, CPU: event.NoCPU, FD: -1, Status: event.StatusOK},
		{ID: 2 | 1<<62, Time: 20, Source: event.SourceEBPF, Layer: event.LayerBlock, Op: event.OpBlockFlush, Native: "F",
			Dev: event.Device{Major: 254}, CPU: event.NoCPU, FD: -1, Status: event.StatusOK},
	}
	out := render(t, "text", Options{}, s)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "#") || !strings.Contains(l, "rwbs=") {
			continue
		}
		f := strings.Fields(l)
		var native, rwbs string
		for i, w := range f {
			if w == "FWS" || w == "F" {
				native = f[i]
			}
			if r, ok := strings.CutPrefix(w, "rwbs="); ok {
				rwbs = r
			}
		}
		if native == "" || rwbs != native {
			t.Errorf("NATIVE %q, rwbs %q: %s", native, rwbs, l)
		}
	}
}

// TestTextFooterCounters: text's footer lists the counters that are not
// 0 (a block counter of a trace without block I/O is not a wall of
// zeros), all of them with Counters; jsonl carries them all either way.
func TestTextFooterCounters(t *testing.T) {
	s := linuxSample()
	s.trailer.Stats.Add(event.CountInfo, "events received", 7)
	s.trailer.Stats.Add(event.CountInfo, "block I/O requests merged", 0)
	out := render(t, "text", Options{}, s)
	if !strings.Contains(out, "#   events received: 7") || strings.Contains(out, "merged") {
		t.Errorf("footer without Counters:\n%s", out[strings.Index(out, "# ---"):])
	}
	if out := render(t, "text", Options{Counters: true}, s); !strings.Contains(out, "#   block I/O requests merged: 0") {
		t.Errorf("footer with Counters lacks the zero counter:\n%s", out[strings.Index(out, "# ---"):])
	}
	if out := render(t, "jsonl", Options{}, s); !strings.Contains(out, "block I/O requests merged") {
		t.Errorf("jsonl lacks the zero counter")
	}
}

// TestTextSaysLayersNotTraced: the summary line says which layer the
// source did not trace, so that no reader takes its absence for no I/O;
// a trace that does not say gets no such words.
func TestTextSaysLayersNotTraced(t *testing.T) {
	for _, c := range []struct {
		header, trailer event.Layers
		want            string
	}{
		{event.LayersOf(event.LayerFile), 0, "# 1 events (file 1; block not traced) in "},
		{event.LayersOf(event.LayerFile, event.LayerBlock), event.LayersOf(event.LayerBlock), "# 1 events (file 1; file not traced) in "},
		{0, 0, "# 1 events (file 1) in "},
	} {
		var buf bytes.Buffer
		s := NewText(&buf, Options{})
		if err := s.Begin(&event.Header{OS: "linux", Layers: c.header}); err != nil {
			t.Fatal(err)
		}
		if err := s.Event(&event.Event{Layer: event.LayerFile, Op: event.OpRead, Path: "/a"}); err != nil {
			t.Fatal(err)
		}
		if err := s.End(&event.Trailer{Layers: c.trailer}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("header %q, trailer %q: no %q in\n%s", c.header, c.trailer, c.want, buf.String())
		}
	}
}

// TestJSONLLayersRoundTrip: the layers traced, "none" included, come back
// from jsonl as written, in the header and in the trailer.
func TestJSONLLayersRoundTrip(t *testing.T) {
	for _, c := range []struct{ header, trailer event.Layers }{
		{event.LayersOf(event.LayerFile, event.LayerBlock), event.LayersOf(event.LayerFile)},
		{event.LayersNone, 0},
		{0, event.LayersNone},
	} {
		var buf bytes.Buffer
		j := NewJSONL(&buf)
		if err := j.Begin(&event.Header{OS: "linux", Layers: c.header}); err != nil {
			t.Fatal(err)
		}
		if err := j.End(&event.Trailer{Layers: c.trailer}); err != nil {
			t.Fatal(err)
		}
		rec := synth.NewRecorder()
		if err := ReadJSONL(context.Background(), &buf, "t.jsonl", rec); err != nil {
			t.Fatal(err)
		}
		got := rec.Trace()
		if got.Header.Layers != c.header || got.Trailer.Layers != c.trailer {
			t.Errorf("wrote %q and %q, read %q and %q", c.header, c.trailer, got.Header.Layers, got.Trailer.Layers)
		}
	}
}
