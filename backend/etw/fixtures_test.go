package etw

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

const (
	fixtureWin8     = "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl"
	fixtureFiltrace = "filtrace_win11_kernel_diskio_fileio-names_compressed.etl"
)

// TestFixturesEndToEnd reads every shared ETL file through the whole
// pipeline: no error, one header, a trailer, events in the common model.
func TestFixturesEndToEnd(t *testing.T) {
	dir := testenv.ETLDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.etl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ETL fixtures in %s: %v", dir, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out sink
			if err := ReadFile(context.Background(), f, Options{}, &out); err != nil {
				t.Fatal(err)
			}
			if out.begins != 1 || out.trailer == nil {
				t.Fatalf("begins %d, trailer %v", out.begins, out.trailer)
			}
			h := out.hdr
			if h.OS != "windows" || h.OSVersion == "" || h.CPUs == 0 || h.StartWall == 0 || h.Clock.Freq == 0 ||
				(h.PointerSize != 4 && h.PointerSize != 8) {
				t.Errorf("header %+v", h)
			}
			st := &out.trailer.Stats
			if st.Get(event.CountInfo, StatRecords) == 0 {
				t.Errorf("no records counted: %+v", st.Sorted())
			}
			for _, c := range st.Counters {
				if strings.Contains(c.Name, "payload does not fit") || c.Name == StatNoHeader {
					t.Errorf("%s: %d", c.Name, c.Value)
				}
			}
			for _, e := range out.events {
				if e.Time < 0 || e.Duration < 0 || e.ID == 0 || e.Native == "" || e.Op == event.OpUnknown {
					t.Fatalf("bad event %+v", e)
				}
			}
		})
	}
}

// perfViewName maps iotrace's native names to TraceEvent's.
func perfViewName(native string) string {
	cls, op, _ := strings.Cut(native, "/")
	switch op {
	case "End":
		op = "Stop"
	case "DCEnd":
		op = "DCStop"
	}
	switch cls {
	case "DiskIo":
		cls = "DiskIO"
	case "Kernel-File":
		return "Microsoft-Windows-Kernel-File/" + op
	case "EventTrace":
		if op == "Header" {
			return "Windows Kernel/EventTrace"
		}
	}
	return "Windows Kernel/" + cls + "/" + op
}

// goldenCounts reads the COUNT lines of a TraceEvent baseline.
func goldenCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "COUNT ")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(line, ':')
		n, err := strconv.Atoi(line[i+1:])
		if err != nil {
			t.Fatalf("%s: bad COUNT line %q", path, line)
		}
		out[line[:i]] = n
	}
	return out
}

// decodedCounts decodes every record of an ETL file and counts the
// decoded ones by TraceEvent name.
func decodedCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	r, err := etl.Open(path, etl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d := kernel.NewDecoder()
	var ev kernel.Event
	out := map[string]int{}
	_, err = r.Read(context.Background(), func(rec *record.Record) error {
		ok, err := d.Decode(rec, &ev)
		if err != nil {
			return fmt.Errorf("record at %#x: %w", rec.FileOffset, err)
		}
		if ok && ev.Native != "" {
			out[perfViewName(ev.Native)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// goldenKinds are the TraceEvent kinds iotrace's decoders cover.
var goldenKinds = regexp.MustCompile(`^(Windows Kernel/(DiskIO|Process|Thread|Image|EventTrace$|SysConfig/(VolumeMapping|SystemPaths|BuildInfo|UnknownVolume)|SystemConfig/(CPU|PhyDisk|LogDisk))|Microsoft-Windows-Kernel-File/)`)

// TestGoldenCounts compares the number of decoded events per kind with
// TraceEvent's COUNT lines, for every kind iotrace decodes.
func TestGoldenCounts(t *testing.T) {
	dir := testenv.ETLDir(t)
	goldens, _ := filepath.Glob(filepath.Join(dir, "golden", "*.traceevent-baseline.txt"))
	if len(goldens) == 0 {
		t.Fatal("no golden files")
	}
	for _, g := range goldens {
		name := strings.TrimSuffix(filepath.Base(g), ".traceevent-baseline.txt") + ".etl"
		t.Run(name, func(t *testing.T) {
			want := goldenCounts(t, g)
			got := decodedCounts(t, filepath.Join(dir, name))
			checked := 0
			for k, n := range want {
				if !goldenKinds.MatchString(k) {
					continue
				}
				// Process PerfCtr events and Kernel-File events other than
				// Create are decoded as ignored or not at all.
				if strings.Contains(k, "PerfCtr") {
					continue
				}
				checked++
				if got[k] != n {
					t.Errorf("%s: decoded %d, TraceEvent counts %d", k, got[k], n)
				}
			}
			for k, n := range got {
				if goldenKinds.MatchString(k) && want[k] == 0 && !strings.Contains(k, "PerfCtr") {
					t.Logf("%s: decoded %d, not in the TraceEvent baseline", k, n)
				}
			}
			t.Logf("%d kinds checked", checked)
		})
	}
}

// goldenEvent is one EVENT line of a TraceEvent baseline.
type goldenEvent struct {
	ms     float64
	kind   string
	fields map[string]string
}

var eventLine = regexp.MustCompile(`^EVENT ([0-9,.]+): (.+?) (PID=.*)$`)

func goldenEvents(t *testing.T, path, prefix string) []goldenEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []goldenEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := eventLine.FindStringSubmatch(sc.Text())
		if m == nil || !strings.HasPrefix(m[2], prefix) {
			continue
		}
		ge := goldenEvent{ms: num(t, m[1]), kind: strings.TrimPrefix(m[2], prefix), fields: map[string]string{}}
		for _, kv := range strings.Split(m[3], "; ") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				ge.fields[k] = strings.TrimSuffix(v, ";")
			}
		}
		out = append(out, ge)
	}
	return out
}

// num parses TraceEvent's numbers: "1,491.123", "0xfffffa83...".
func num(t *testing.T, s string) float64 {
	t.Helper()
	s = strings.ReplaceAll(s, ",", "")
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		v, err := strconv.ParseUint(h, 16, 64)
		if err != nil {
			t.Fatalf("bad hex %q", s)
		}
		return float64(v)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return v
}

func hexField(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("bad hex %q", s)
	}
	return v
}

func nearMs(a float64, ns int64) bool {
	d := a - float64(ns)/1e6
	return d < 0.0015 && d > -0.0015
}

// TestGoldenDiskIO checks the first events of each DiskIo kind against
// TraceEvent's decoding, field by field.
func TestGoldenDiskIO(t *testing.T) {
	dir := testenv.ETLDir(t)
	var out sink
	if err := ReadFile(context.Background(), filepath.Join(dir, fixtureWin8), Options{}, &out); err != nil {
		t.Fatal(err)
	}
	golden := goldenEvents(t, filepath.Join(dir, "golden", strings.TrimSuffix(fixtureWin8, ".etl")+".traceevent-baseline.txt"), "Windows Kernel/DiskIO/")
	seen := map[string]int{}
	for _, g := range golden {
		i := seen[g.kind]
		seen[g.kind]++
		init := strings.HasSuffix(g.kind, "Init")
		var native string
		switch g.kind {
		case "Read", "ReadInit":
			native = "DiskIo/Read"
		case "Write", "WriteInit":
			native = "DiskIo/Write"
		case "FlushBuffers", "FlushInit":
			native = "DiskIo/FlushBuffers"
		default:
			t.Fatalf("unexpected golden kind %q", g.kind)
		}
		evs := out.byNative(native)
		if init {
			// Inits in issue order: iotrace's events start at their Init.
			sortByTime(evs)
		}
		if i >= len(evs) {
			t.Fatalf("%s #%d: only %d events", g.kind, i, len(evs))
		}
		e := evs[i]
		where := fmt.Sprintf("%s #%d at %.3f ms", g.kind, i, g.ms)
		if irp := hexField(t, g.fields["Irp"]); e.Request != irp {
			t.Errorf("%s: IRP %#x, want %#x", where, e.Request, irp)
		}
		if init {
			if !nearMs(g.ms, e.Time) {
				t.Errorf("%s: start %.4f ms", where, float64(e.Time)/1e6)
			}
			// The Init's context is the issuing process, except on an
			// idle CPU (the thread may be the IssuingThreadId instead).
			if g.fields["TID"] != "0" && (strconv.Itoa(int(e.Pid)) != g.fields["PID"] || e.Comm != g.fields["PName"]) {
				t.Errorf("%s: issuer %s (%d/%d), want %s (%s/%s)", where, e.Comm, e.Pid, e.Tid, g.fields["PName"], g.fields["PID"], g.fields["TID"])
			}
			continue
		}
		if !nearMs(g.ms, e.End()) {
			t.Errorf("%s: completion at %.4f ms", where, float64(e.End())/1e6)
		}
		if el := num(t, g.fields["ElapsedTimeMSec"]); !nearMs(el, e.Duration-e.Wait) {
			t.Errorf("%s: device time %.4f ms, want %.3f", where, float64(e.Duration-e.Wait)/1e6, el)
		}
		if e.Dev != (event.Device{Major: uint32(num(t, g.fields["DiskNumber"])), IsDisk: true}) {
			t.Errorf("%s: device %v", where, e.Dev)
		}
		if g.fields["PID"] != "-1" { // TraceEvent reads FlushBuffers' issuer from the wrong offset
			if strconv.Itoa(int(e.Pid)) != g.fields["PID"] || strconv.Itoa(int(e.Tid)) != g.fields["TID"] || e.Comm != g.fields["PName"] {
				t.Errorf("%s: issuer %s (%d/%d), want %s (%s/%s)", where, e.Comm, e.Pid, e.Tid, g.fields["PName"], g.fields["PID"], g.fields["TID"])
			}
		}
		if g.kind == "FlushBuffers" {
			continue
		}
		if fk := hexField(t, g.fields["FileKey"]); e.FileKey != fk {
			t.Errorf("%s: FileKey %#x, want %#x", where, e.FileKey, fk)
		}
		if e.Size != uint64(num(t, g.fields["TransferSize"])) || e.Offset != int64(num(t, g.fields["ByteOffset"])) {
			t.Errorf("%s: %d bytes at %d", where, e.Size, e.Offset)
		}
		name := g.fields["FileName"]
		if p, cut := strings.CutSuffix(name, "..."); cut {
			if !strings.HasPrefix(e.Path, p) {
				t.Errorf("%s: path %q, want %q...", where, e.Path, p)
			}
		} else if e.Path != name {
			t.Errorf("%s: path %q, want %q", where, e.Path, name)
		}
	}
	for _, k := range []string{"Read", "ReadInit", "Write", "WriteInit", "FlushBuffers", "FlushInit"} {
		if seen[k] == 0 {
			t.Errorf("no golden %s events checked", k)
		}
	}
}

func sortByTime(evs []event.Event) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].Time < evs[j-1].Time; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// TestFiltraceUnresolved: the trimmed Windows 11 trace has 119 disk I/Os,
// 2 of which name no file; they must be counted, not left blank silently.
func TestFiltraceUnresolved(t *testing.T) {
	dir := testenv.ETLDir(t)
	var out sink
	if err := ReadFile(context.Background(), filepath.Join(dir, fixtureFiltrace), Options{}, &out); err != nil {
		t.Fatal(err)
	}
	st := &out.trailer.Stats
	total := st.Get(event.CountInfo, StatDiskIOs)
	resolved := st.Get(event.CountInfo, StatDiskResolved)
	unresolved := st.Get(event.CountUnresolved, StatDiskNoFile) + st.Get(event.CountUnresolved, StatDiskUnresolved)
	if total != 119 || resolved != 117 || unresolved != 2 {
		t.Errorf("disk I/Os %d, resolved %d, unresolved %d; want 119, 117, 2: %+v", total, resolved, unresolved, st.Sorted())
	}
	var blank int
	for _, e := range out.events {
		if e.Layer == event.LayerBlock && e.Path == "" {
			blank++
		}
	}
	if blank != 2 {
		t.Errorf("%d disk events without a path, want 2", blank)
	}
	found := false
	for _, c := range st.Problems() {
		if c.Kind == event.CountUnresolved && c.Value == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("the 2 unresolved disk I/Os are not among the problems shown: %+v", st.Problems())
	}
	// No volume mapping in this trace: the 117 paths stay in NT form
	// (no drive letter is invented) and the summary says why.
	var nt int
	for _, e := range out.events {
		if strings.HasPrefix(e.Path, `\Device\HarddiskVolume2\`) {
			nt++
		}
	}
	if nt != 117 || st.Get(event.CountInfo, StatNTPath) != 117 {
		t.Errorf("%d paths in NT form, %s = %d; want 117", nt, StatNTPath, st.Get(event.CountInfo, StatNTPath))
	}
	if out.hdr.OSVersion != "10.0.26200" || out.hdr.Hostname == "" {
		t.Errorf("header %+v", out.hdr)
	}
}
