package etl

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

func openFixture(t testing.TB, name string, opts Options) *Reader {
	t.Helper()
	r, err := Open(filepath.Join(testenv.ETLDir(t), name), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// recKey identifies a record independently of delivery order.
type recKey struct {
	off int64
	ts  int64
	cpu uint16
}

// TestFixturesReadEndToEnd reads every shared ETL file in both orders:
// no error, every buffer indexed, timestamps non-decreasing after the
// merge, the same records in both orders.
func TestFixturesReadEndToEnd(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.ETLDir(t), "*.etl"))
	if err != nil || len(files) < 13 {
		t.Fatalf("found %d fixtures (%v), want at least 13", len(files), err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			r := openFixture(t, name, Options{})
			h := r.Header()
			if got := len(r.Buffers()); uint32(got) != h.BuffersWritten {
				t.Errorf("%d buffers indexed, header BuffersWritten = %d", got, h.BuffersWritten)
			}
			rs := r.Records()
			var keys []recKey
			last := int64(math.MinInt64)
			for {
				rec, err := rs.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("after %d records: %v", len(keys), err)
				}
				if rec.Timestamp < last {
					t.Fatalf("record %d (buffer %d) at %d is older than the one before it (%d)", len(keys), rec.Buffer, rec.Timestamp, last)
				}
				last = rec.Timestamp
				if rec.PointerSize != 4 && rec.PointerSize != 8 {
					t.Fatalf("record %d: pointer size %d", len(keys), rec.PointerSize)
				}
				keys = append(keys, recKey{rec.FileOffset, rec.Timestamp, rec.CPU})
			}
			if _, err := rs.Next(); err != io.EOF {
				t.Errorf("Next after the end: %v, want io.EOF", err)
			}
			st := rs.Stats()
			if got := st.Get(event.CountInfo, "etl: records"); got != uint64(len(keys)) {
				t.Errorf("Stats records = %d, delivered %d", got, len(keys))
			}
			if p := st.Problems(); len(p) != 0 && h.EventsLost == 0 {
				t.Errorf("problems reported for an intact file: %v", p)
			}

			// File order: the same records.
			var fileKeys []recKey
			if _, err := openFixture(t, name, Options{Order: OrderFile}).Read(context.Background(), func(rec *record.Record) error {
				fileKeys = append(fileKeys, recKey{rec.FileOffset, rec.Timestamp, rec.CPU})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			sortKeys(keys)
			sortKeys(fileKeys)
			if len(keys) != len(fileKeys) {
				t.Fatalf("time order gave %d records, file order %d", len(keys), len(fileKeys))
			}
			for i := range keys {
				if keys[i] != fileKeys[i] {
					t.Fatalf("record sets differ at %d: %+v vs %+v", i, keys[i], fileKeys[i])
				}
			}
		})
	}
}

func sortKeys(k []recKey) {
	sort.Slice(k, func(i, j int) bool { return k[i].off < k[j].off || k[i].off == k[j].off && k[i].ts < k[j].ts })
}

// TestFixtureHeaders checks log-file header fields against SOURCES.md.
func TestFixtureHeaders(t *testing.T) {
	for _, c := range []struct {
		file                      string
		ptr, cpus, build, buffers uint32
		compressed                int // buffers with the compressed flag
		eventsLost                uint32
		mode                      uint32
		major, minor              uint8
		logger                    string
		bufSize                   uint32
		freq                      int64
	}{
		{"perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl", 8, 8, 9200, 360, 359, 0, 0x04010001, 6, 2, "Relogger", 65536, 10_000_000},
		{"filtrace_win11_kernel_diskio_fileio-names_compressed.etl", 8, 32, 26200, 50, 49, 0, 0, 10, 0, "", 65536, 0},
		{"airbus_win10_shutdown_perfdiag_systemlogger_kernel.etl", 8, 2, 18362, 49, 0, 0, 0x02000080, 10, 0, "PerfDiag Logger", 65536, 0},
		{"perfview_win10_32bit_pointersize4_tiny_compressed.etl", 4, 4, 10586, 2, 1, 0, 0, 10, 0, "", 65536, 3_117_777},
		{"syzygy_win7_32bit_logger_image_v2_mof.etl", 4, 16, 7600, 2, 0, 0, 0, 6, 1, "", 65536, 0},
		{"syzygy_win7_32bit_logger_process_v3_mof.etl", 4, 16, 7600, 3, 0, 0, 0, 6, 1, "", 65536, 0},
		{"tx_win7_http_server_manifest.etl", 8, 4, 7601, 36, 0, 0, 0, 6, 1, "", 8192, 0},
		{"tx_win7_kernel-process_manifest.etl", 8, 2, 7600, 182, 0, 0, 0, 6, 1, "", 8192, 0},
		{"krabsetw_win11_powershell_manifest.etl", 8, 32, 22623, 26, 0, 0, 0, 10, 0, "", 8192, 0},
		{"perfview_win10_clr_rundown_manifest.etl", 8, 8, 19045, 2, 0, 0, 0x08000001, 10, 0, "", 65536, 10_000_000},
		{"perfview_win10_tracelogging_primitive_types.etl", 8, 8, 19043, 2, 0, 0, 0, 10, 0, "solar_system", 8192, 10_000_000},
		{"perfview_win11_tracelogging_single_event_compressed.etl", 8, 0, 22000, 3, 2, 0, 0, 10, 0, "", 0, 0},
		{"airbus_win10_amsi_tracelogging_eventslost3.etl", 8, 8, 18362, 6, 0, 3, 0, 10, 0, "", 65536, 0},
		{"airbus_win10_lxcore_tracelogging.etl", 8, 6, 19041, 3, 0, 0, 0, 10, 0, "", 8192, 0},
	} {
		t.Run(c.file, func(t *testing.T) {
			r := openFixture(t, c.file, Options{})
			h := r.Header()
			check := func(field string, got, want any) {
				t.Helper()
				if got != want {
					t.Errorf("%s = %v, want %v", field, got, want)
				}
			}
			check("PointerSize", h.PointerSize, c.ptr)
			check("Build", h.Build, c.build)
			if c.cpus != 0 {
				check("NumberOfProcessors", h.NumberOfProcessors, c.cpus)
			}
			check("buffers", uint32(len(r.Buffers())), c.buffers)
			n := 0
			for _, b := range r.Buffers() {
				if b.Compressed() {
					n++
				}
			}
			check("compressed buffers", n, c.compressed)
			check("Compressed()", h.Compressed(), c.compressed > 0)
			if c.compressed > 0 {
				check("CompressionFormat", h.CompressionFormat, uint16(CompressionXpress))
			}
			check("EventsLost", h.EventsLost, c.eventsLost)
			check("BuffersLost", h.BuffersLost, uint32(0))
			if c.mode != 0 {
				check("LogFileMode", h.LogFileMode, c.mode)
			}
			check("OSMajor", h.OSMajor, c.major)
			check("OSMinor", h.OSMinor, c.minor)
			if c.logger != "" {
				check("LoggerName", h.LoggerName, c.logger)
			}
			if c.bufSize != 0 {
				check("BufferSize", h.BufferSize, c.bufSize)
			}
			if c.freq != 0 {
				check("PerfFreq", h.PerfFreq, c.freq)
			}
			check("ClockType", h.ClockType, uint32(ClockTypeQPC))
			check("first buffer type", r.Buffers()[0].Type, uint16(BufferTypeHeader))
			// Wall time of time 0 is the session start.
			check("WallTime(origin)", h.WallTime(h.HeaderTimestamp), FiletimeToTime(h.StartTime))
		})
	}
}

// TestPerfViewRecordCounts checks the record count per header type of the
// PerfView x64 file given in SOURCES.md.
func TestPerfViewRecordCounts(t *testing.T) {
	r := openFixture(t, largestFixture, Options{})
	rs := r.Records()
	for {
		if _, err := rs.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
	}
	want := map[uint8]uint64{
		HeaderSystem64: 3189, HeaderPerfInfo64: 100157, HeaderFull64: 7956,
		HeaderEventHeader64: 34765, HeaderEventHeader32: 33378, HeaderFull32: 27,
		HeaderSystem32: 2,
	}
	var total uint64
	for ht := 0; ht < 256; ht++ {
		got := rs.Count(uint8(ht))
		if got != want[uint8(ht)] {
			t.Errorf("%s: %d records, want %d", HeaderTypeName(uint8(ht)), got, want[uint8(ht)])
		}
		total += got
	}
	if total != 179474 {
		t.Errorf("%d records, want 179,474", total)
	}
	st := rs.Stats()
	if got := st.Get(event.CountInfo, "etl: records EVENT_HEADER32"); got != 33378 {
		t.Errorf("Stats EVENT_HEADER32 = %d", got)
	}
	if got := st.Get(event.CountInfo, "etl: compressed buffers"); got != 359 {
		t.Errorf("Stats compressed buffers = %d", got)
	}
}

// readAll returns copies of every record of a fixture.
func readAll(t testing.TB, name string) ([]record.Record, *Reader) {
	t.Helper()
	r := openFixture(t, name, Options{})
	var out []record.Record
	if _, err := r.Read(context.Background(), func(rec *record.Record) error {
		out = append(out, rec.Clone())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out, r
}

// TestFixtureContents checks what SOURCES.md says each file holds.
func TestFixtureContents(t *testing.T) {
	imageGUID := GroupGUID(record.GroupImage)
	processGUID := GroupGUID(record.GroupProcess)
	for _, c := range []struct {
		file  string
		check func(t *testing.T, recs []record.Record, r *Reader)
	}{
		{"airbus_win10_shutdown_perfdiag_systemlogger_kernel.etl", func(t *testing.T, recs []record.Record, r *Reader) {
			if len(recs) != 17078 {
				t.Errorf("%d records, want 17,078", len(recs))
			}
			groups := map[uint8]int{}
			for _, rec := range recs {
				groups[rec.Group]++
			}
			for _, g := range []uint8{record.GroupProcess, record.GroupThread, record.GroupImage} {
				if groups[g] == 0 {
					t.Errorf("no records of group %d", g)
				}
			}
			span := r.Header().Nanos(recs[len(recs)-1].Timestamp) - r.Header().Nanos(recs[0].Timestamp)
			if h := float64(span) / 3600e9; h < 8.1 || h > 8.3 {
				t.Errorf("trace spans %.2f h, want 8.2 h", h)
			}
		}},
		{"perfview_win10_32bit_pointersize4_tiny_compressed.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			if len(recs) != 2 || recs[0].HeaderType != HeaderSystem32 || recs[1].HeaderType != HeaderEventHeader32 {
				t.Fatalf("records: %+v", recs)
			}
			if recs[1].PointerSize != 4 || recs[1].Kind != record.KindEvent {
				t.Errorf("CLR rundown event: pointer size %d kind %v", recs[1].PointerSize, recs[1].Kind)
			}
		}},
		{"syzygy_win7_32bit_logger_image_v2_mof.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			n := 0
			for _, rec := range recs[1:] {
				if rec.HeaderType != HeaderFull32 || rec.Provider != imageGUID || rec.Version != 2 || rec.Kind != record.KindClassic || rec.PointerSize != 4 {
					t.Errorf("record: %v %s v%d kind %v ptr %d", HeaderTypeName(rec.HeaderType), rec.Provider, rec.Version, rec.Kind, rec.PointerSize)
				}
				n++
			}
			if n != 26 {
				t.Errorf("%d Image events, want 26", n)
			}
		}},
		{"syzygy_win7_32bit_logger_process_v3_mof.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			n := 0
			for _, rec := range recs[1:] {
				if rec.Provider == processGUID && rec.Version == 3 {
					n++
				}
			}
			if n != 8 {
				t.Errorf("%d Process v3 events, want 8", n)
			}
		}},
		{"tx_win7_http_server_manifest.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			n, related := 0, 0
			http, _ := ParseGUID("dd5ef90a-6398-47a4-ad34-4dcecdef795f")
			for _, rec := range recs {
				if rec.Provider == http && rec.Kind == record.KindEvent {
					n++
				}
				for _, e := range rec.Ext {
					if e.Type == 1 && len(e.Data) == 16 {
						related++
					}
				}
			}
			if n != 2041 || related == 0 {
				t.Errorf("%d HttpService events (want 2,041), %d RELATED_ACTIVITYID items (want > 0)", n, related)
			}
		}},
		{"tx_win7_kernel-process_manifest.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			kp, _ := ParseGUID("22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716")
			n := 0
			for _, rec := range recs {
				if rec.Provider == kp {
					n++
				}
			}
			if n != 10343 {
				t.Errorf("%d Kernel-Process events, want 10,343", n)
			}
		}},
		{"krabsetw_win11_powershell_manifest.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			ps, _ := ParseGUID("a0c1853b-5c40-4b15-8766-3cf1c58f985a")
			n := 0
			for _, rec := range recs {
				if rec.Provider == ps {
					n++
				}
			}
			if n != 112 {
				t.Errorf("%d PowerShell events, want 112", n)
			}
		}},
		{"perfview_win10_clr_rundown_manifest.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			rd, _ := ParseGUID("a669021c-c450-4609-a035-5af59af4df18")
			n := 0
			for _, rec := range recs {
				if rec.Provider == rd {
					n++
				}
			}
			if n != 110 {
				t.Errorf("%d CLR rundown events, want 110", n)
			}
		}},
		{"perfview_win10_tracelogging_primitive_types.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			n := 0
			for _, rec := range recs {
				if rec.Kind != record.KindEvent {
					continue
				}
				n++
				if len(rec.Ext) != 2 || rec.Ext[0].Type != 12 || rec.Ext[1].Type != 11 {
					t.Errorf("TraceLogging event ext items: %+v, want PROV_TRAITS (12) then EVENT_SCHEMA_TL (11)", rec.Ext)
				}
				// The provider traits start with their own size and the
				// provider name.
				if len(rec.Ext) > 0 && !strings.Contains(string(rec.Ext[0].Data), "solar_system") {
					t.Errorf("PROV_TRAITS %q does not name the provider", rec.Ext[0].Data)
				}
			}
			if n != 5 {
				t.Errorf("%d TraceLogging events, want 5", n)
			}
		}},
		{"perfview_win11_tracelogging_single_event_compressed.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			n := 0
			for _, rec := range recs {
				if rec.Kind == record.KindEvent {
					n++
					if len(rec.Ext) == 0 {
						t.Error("TraceLogging event without extended data")
					}
				}
			}
			if n != 1 {
				t.Errorf("%d EVENT_HEADER records, want 1", n)
			}
		}},
		{"airbus_win10_amsi_tracelogging_eventslost3.etl", func(t *testing.T, recs []record.Record, r *Reader) {
			n := 0
			for _, rec := range recs {
				if rec.Kind == record.KindEvent {
					n++
				}
			}
			if n != 19 {
				t.Errorf("%d AMSI events, want 19", n)
			}
			stats, err := r.Read(context.Background(), func(*record.Record) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if got := stats.Get(event.CountLost, "etl: events lost by the session (header EventsLost)"); got != 3 {
				t.Errorf("lost counter = %d, want 3", got)
			}
			if len(stats.Problems()) == 0 {
				t.Error("EventsLost=3 is not among the problems shown to the user")
			}
		}},
		{"airbus_win10_lxcore_tracelogging.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			lx, _ := ParseGUID("0cd1c309-0878-4515-83db-749843b3f5c9")
			n := 0
			for _, rec := range recs {
				if rec.Provider == lx {
					n++
				}
			}
			if n != 2 {
				t.Errorf("%d lxcore events, want 2", n)
			}
		}},
		{"filtrace_win11_kernel_diskio_fileio-names_compressed.etl", func(t *testing.T, recs []record.Record, _ *Reader) {
			// DiskIo v3 (group 1): Write 117 / WriteInit 116 / Read 2 /
			// ReadInit 2 / FlushInit 4; FileIo names: FileCreate 18 /
			// FileDelete 17 / FileRundown 3.
			want := map[[2]uint8]int{{1, 11}: 117, {1, 13}: 116, {1, 10}: 2, {1, 12}: 2, {1, 15}: 4, {4, 32}: 18, {4, 35}: 17, {4, 36}: 3}
			got := map[[2]uint8]int{}
			for _, rec := range recs {
				if rec.Kind == record.KindSystem || rec.Kind == record.KindPerfInfo {
					got[[2]uint8{rec.Group, rec.Opcode}]++
				}
			}
			for k, n := range want {
				if got[k] != n {
					t.Errorf("group %d opcode %d: %d records, want %d", k[0], k[1], got[k], n)
				}
			}
		}},
		{largestFixture, func(t *testing.T, recs []record.Record, _ *Reader) {
			want := map[[2]uint8]int{{1, 10}: 1208, {1, 12}: 1208, {1, 11}: 21, {1, 13}: 21, {1, 14}: 2, {1, 15}: 2, {4, 36}: 3054, {4, 32}: 16, {4, 35}: 14}
			got := map[[2]uint8]int{}
			for _, rec := range recs {
				if rec.Kind == record.KindSystem || rec.Kind == record.KindPerfInfo {
					got[[2]uint8{rec.Group, rec.Opcode}]++
					// DiskIo v3 completions are PERFINFO (no TID/PID), the
					// Init events SYSTEM; payload sizes per etw.md.
					if rec.Group == 1 {
						size := map[uint8]int{10: 52, 11: 52, 12: 12, 13: 12, 14: 28, 15: 12}[rec.Opcode]
						if len(rec.UserData) != size || rec.Version != 3 {
							t.Fatalf("DiskIo opcode %d: %d bytes v%d, want %d bytes v3", rec.Opcode, len(rec.UserData), rec.Version, size)
						}
						if perf := rec.Kind == record.KindPerfInfo; perf != (rec.Opcode == 10 || rec.Opcode == 11 || rec.Opcode == 14) || perf && rec.ThreadID != record.NoID {
							t.Fatalf("DiskIo opcode %d: header %s, tid %d", rec.Opcode, HeaderTypeName(rec.HeaderType), rec.ThreadID)
						}
					}
				}
			}
			for k, n := range want {
				if got[k] != n {
					t.Errorf("group %d opcode %d: %d records, want %d", k[0], k[1], got[k], n)
				}
			}
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			recs, r := readAll(t, c.file)
			c.check(t, recs, r)
		})
	}
}

var goldenEvent = regexp.MustCompile(`^EVENT ([0-9,]+\.[0-9]{3}): (\S[^=]*?) PID=(-?\d+); TID=(-?\d+); PName=[^;]*; ProceNum=(\d+); DataLen=(\d+);`)

type goldenLine struct {
	us           int64 // time in µs
	name         string
	pid, tid     int64
	cpu, dataLen int
}

func readGolden(t *testing.T, file string) []goldenLine {
	f, err := os.Open(filepath.Join(testenv.ETLDir(t), "golden", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []goldenLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := goldenEvent.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ms := strings.ReplaceAll(m[1], ",", "")
		dot := strings.IndexByte(ms, '.')
		us, _ := strconv.ParseInt(ms[:dot]+ms[dot+1:], 10, 64)
		g := goldenLine{us: us, name: m[2]}
		g.pid, _ = strconv.ParseInt(m[3], 10, 64)
		g.tid, _ = strconv.ParseInt(m[4], 10, 64)
		g.cpu, _ = strconv.Atoi(m[5])
		g.dataLen, _ = strconv.Atoi(m[6])
		out = append(out, g)
	}
	if len(out) == 0 {
		t.Fatalf("no EVENT lines in %s", file)
	}
	return out
}

// TestGolden matches every event TraceEvent printed (time in ms from the
// trace start, processor, payload length) to a record, and the first
// DiskIo Init events of the PerfView file field by field where the header
// carries them (thread and process).
func TestGolden(t *testing.T) {
	for _, c := range []struct{ etl, golden string }{
		{largestFixture, "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.traceevent-baseline.txt"},
		{"perfview_win10_clr_rundown_manifest.etl", "perfview_win10_clr_rundown_manifest.traceevent-baseline.txt"},
		{"perfview_win10_tracelogging_primitive_types.etl", "perfview_win10_tracelogging_primitive_types.traceevent-baseline.txt"},
	} {
		t.Run(c.etl, func(t *testing.T) {
			recs, r := readAll(t, c.etl)
			clock := r.Header().Clock()
			type key struct {
				us       int64
				cpu, len int
			}
			idx := map[key][]int{}
			for i, rec := range recs {
				ns := clock.ToNanos(rec.Timestamp)
				us := (ns + 500) / 1000
				idx[key{us, int(rec.CPU), len(rec.UserData)}] = append(idx[key{us, int(rec.CPU), len(rec.UserData)}], i)
			}
			lines := readGolden(t, c.golden)
			firstDisk := map[string]bool{}
			for _, g := range lines {
				var found []int
				for d := int64(-1); d <= 1; d++ {
					found = append(found, idx[key{g.us + d, g.cpu, g.dataLen}]...)
				}
				if len(found) == 0 {
					t.Errorf("no record for golden %s at %.3f ms cpu %d len %d", g.name, float64(g.us)/1000, g.cpu, g.dataLen)
					continue
				}
				if strings.HasPrefix(g.name, "Windows Kernel/DiskIO/") && strings.HasSuffix(g.name, "Init") && !firstDisk[g.name] {
					firstDisk[g.name] = true
					ok := false
					for _, i := range found {
						rec := recs[i]
						if rec.Group == record.GroupDiskIo && int64(rec.ProcessID) == g.pid && int64(rec.ThreadID) == g.tid {
							ok = true
						}
					}
					if !ok {
						t.Errorf("first %s at %.3f ms: no DiskIo record with pid %d tid %d", g.name, float64(g.us)/1000, g.pid, g.tid)
					}
				}
			}
			if c.etl == largestFixture && len(firstDisk) != 3 {
				t.Errorf("checked the first %d DiskIo Init kinds, want 3 (ReadInit, WriteInit, FlushInit)", len(firstDisk))
			}
			t.Logf("%d golden events matched", len(lines))
		})
	}
}

func TestFormatErrorMessage(t *testing.T) {
	e := &FormatError{Buffer: 3, BufferOffset: 0x3000, Pos: 0x58, Field: "record size", Err: corruptf("bad")}
	want := "etl: buffer 3 at file offset 0x3000, file offset 0x3058: record size: corrupt data: bad"
	if e.Error() != want {
		t.Errorf("got %q\nwant %q", e.Error(), want)
	}
	e.Compressed = true
	if !strings.Contains(e.Error(), "byte 0x58 of its decompressed data") || !errors.Is(e, ErrCorrupt) {
		t.Errorf("compressed: %q", e.Error())
	}
}
