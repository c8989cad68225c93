package live

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
	"github.com/iotrace/iotrace/symbolize/peid"
)

// testPE is an x64 image linked by lld-link with /debug (symbolize/peid's
// fixture): llvm-readobj --coff-debug-directory prints its CodeView
// record, GUID 91 95 3A 73 C2 C6 E5 94 4C 4C 44 20 50 44 42 2E, age 1,
// /tmp/pdbt/x.pdb.
func testPE(t testing.TB) ([]byte, peid.Identity) {
	b, err := os.ReadFile("../../../symbolize/peid/testdata/modules.exe")
	if err != nil {
		t.Fatal(err)
	}
	id, err := peid.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil || !id.HasPDB {
		t.Fatalf("test PE: %+v %v", id, err)
	}
	return b, id
}

// withoutPDB returns a copy of the PE whose CodeView record is not RSDS.
func withoutPDB(b []byte) []byte {
	c := append([]byte(nil), b...)
	i := bytes.Index(c, []byte("RSDS"))
	copy(c[i:], "NB10")
	return c
}

// imageRecord builds a version 3, 64-bit Image record as Windows logs it.
func imageRecord(op uint8, ts int64, pid uint32, base, size uint64, stamp uint32, name string) record.Record {
	b := make([]byte, 56)
	binary.LittleEndian.PutUint64(b[0:], base)
	binary.LittleEndian.PutUint64(b[8:], size)
	binary.LittleEndian.PutUint32(b[16:], pid)
	binary.LittleEndian.PutUint32(b[20:], 0xc0ffee) // checksum
	binary.LittleEndian.PutUint32(b[24:], stamp)
	binary.LittleEndian.PutUint64(b[32:], base)
	b = ownprovider.AppendWString(b, name)
	return record.Record{Kind: record.KindClassic, Provider: kernel.GUIDImage, Opcode: op, Version: 3, PointerSize: 8,
		ThreadID: 11, ProcessID: pid, Timestamp: ts, CPU: 1, UserData: b, FileOffset: -1, Buffer: -1}
}

func TestParseImageLoadFixture(t *testing.T) {
	all, _ := fixtureRecords(t, stackFixture)
	n := 0
	for i := range all {
		r := &all[i]
		if r.Provider != kernel.GUIDImage || (r.Opcode != kernel.OpcodeImageLoad && r.Opcode != kernel.OpcodeImageDCStart) {
			continue
		}
		im, ok := parseImageLoad(r)
		if !ok || im.base == 0 || im.size == 0 || im.name[0] != '\\' {
			t.Fatalf("record %d (v%d): %+v %v", i, r.Version, im, ok)
		}
		n++
	}
	if n < 100 {
		t.Errorf("%d image loads", n)
	}
	// Short and foreign records are refused, never a panic.
	r := imageRecord(kernel.OpcodeImageLoad, 1, 2, 3, 4, 5, `\x`)
	for k := 0; k < 56; k++ {
		c := r
		c.UserData = r.UserData[:k]
		if _, ok := parseImageLoad(&c); ok {
			t.Fatalf("%d bytes parsed", k)
		}
	}
	r.Opcode = kernel.OpcodeImageUnload
	if _, ok := parseImageLoad(&r); ok {
		t.Error("unload parsed")
	}
}

func TestImageFilePath(t *testing.T) {
	vols := map[string]string{`\Device\HarddiskVolume1`: "D:", `\Device\HarddiskVolume3`: "C:"}
	for in, want := range map[string]string{
		`\Device\HarddiskVolume3\Windows\System32\ntdll.dll`: `C:\Windows\System32\ntdll.dll`,
		`\device\harddiskvolume1\a.dll`:                      `D:\a.dll`,
		`\Device\HarddiskVolume10\b.dll`:                     `\\?\GLOBALROOT\Device\HarddiskVolume10\b.dll`,
		`\SystemRoot\system32\ntoskrnl.exe`:                  `\\?\GLOBALROOT\SystemRoot\system32\ntoskrnl.exe`,
		`\??\C:\drivers\x.sys`:                               `C:\drivers\x.sys`,
		`C:\already\win32.dll`:                               `C:\already\win32.dll`,
	} {
		if got := imageFilePath(in, vols); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// recorder is a pipeline that keeps what it is given.
type recorder struct {
	mu   sync.Mutex
	recs []record.Record
	ids  uint64
}

func (r *recorder) NewID() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids++
	return r.ids
}

func (r *recorder) Push(rec *record.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec.Clone())
	r.mu.Unlock()
	return nil
}

// TestImageIdentityInStream: each image load whose file carries a
// CodeView record is followed in the stream the pipeline consumes by
// iotrace's OpcodeImage record, with the same timestamp and context, the
// image's base, size and name and the file's PDB identity; files that
// cannot be read, that differ from the loaded image, or have no PDB
// record are counted; each file version is read once.
func TestImageIdentityInStream(t *testing.T) {
	pe, id := testPE(t)
	f := newFakeAPI()
	f.imageFiles = map[string][]byte{
		`C:\app\mod.exe`: pe,
		`\\?\GLOBALROOT\SystemRoot\system32\drivers\m.sys`: pe,
		`C:\app\nopdb.dll`: withoutPDB(pe),
	}
	size := uint64(id.SizeOfImage)
	in := []record.Record{
		imageRecord(kernel.OpcodeImageDCStart, 100, 4, 0xfffff80000100000, size, id.TimeDateStamp, `\SystemRoot\system32\drivers\m.sys`),
		imageRecord(kernel.OpcodeImageDCStart, 101, 900, 0x140000000, size, id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`),
		imageRecord(kernel.OpcodeImageLoad, 200, 901, 0x7ff600000000, size, id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`),
		imageRecord(kernel.OpcodeImageLoad, 300, 901, 0x7ff700000000, 0x9000, 7, `\Device\HarddiskVolume3\app\gone.dll`),
		imageRecord(kernel.OpcodeImageLoad, 400, 901, 0x7ff800000000, size, id.TimeDateStamp+1, `\Device\HarddiskVolume3\app\mod.exe`),
		imageRecord(kernel.OpcodeImageLoad, 500, 901, 0x7ff900000000, size, id.TimeDateStamp, `\Device\HarddiskVolume3\app\nopdb.dll`),
		imageRecord(kernel.OpcodeImageLoad, 550, 901, 0x7ffa00000000, size+0x1000, 0, `\Device\HarddiskVolume3\app\mod.exe`),
		imageRecord(kernel.OpcodeImageUnload, 600, 901, 0x7ff600000000, size, id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`),
	}
	for _, reorder := range []bool{true, false} {
		q := newQueue(64)
		for i := range in {
			if reorder {
				deliver(q, &in[len(in)-1-i]) // arrival order reversed: the window sorts
			} else {
				deliver(q, &in[i])
			}
		}
		q.closeWork()
		var ro *reorderer
		if reorder {
			ro = newReorderer(1<<40, 0)
		}
		ir := newImageResolver(f, f.vols)
		pl := &recorder{}
		out := newLiveSink(&memSink{}, &event.Header{}, nil, newPidFilter(&backend.Options{}, 4242))
		if err := consume(q, ro, func() int64 { return 0 }, pl, out, nil, ir, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		type want struct {
			pid  uint32
			base uint64
			name string
		}
		wants := map[int64]want{
			100: {4, 0xfffff80000100000, `\SystemRoot\system32\drivers\m.sys`},
			101: {900, 0x140000000, `\Device\HarddiskVolume3\app\mod.exe`},
			200: {901, 0x7ff600000000, `\Device\HarddiskVolume3\app\mod.exe`},
		}
		got := 0
		for i, r := range pl.recs {
			if r.Provider != ownprovider.GUID {
				continue
			}
			prev := pl.recs[i-1]
			w, ok := wants[r.Timestamp]
			if !ok || r.Opcode != ownprovider.OpcodeImage || prev.Provider != kernel.GUIDImage || prev.Timestamp != r.Timestamp ||
				r.ProcessID != prev.ProcessID || r.ThreadID != prev.ThreadID || r.Kind != record.KindClassic || r.PointerSize != 8 {
				t.Fatalf("reorder %v: record %d %+v after %+v", reorder, i, r, prev)
			}
			im, err := ownprovider.DecodeImage(r.UserData)
			if err != nil {
				t.Fatal(err)
			}
			if im.ProcessID != w.pid || im.Base != w.base || im.Size != size || im.FileName != w.name || im.PdbName != id.PDBName ||
				im.Age != id.PDBAge || im.PdbGUID != record.GUIDFromBytes(id.PDBGUID[:]) || im.TimeDateStamp != id.TimeDateStamp || im.CheckSum != id.CheckSum {
				t.Errorf("reorder %v: identity %+v", reorder, im)
			}
			if im.PdbGUID.String() != "733a9591-c6c2-94e5-4c4c-44205044422e" {
				t.Errorf("GUID %s", im.PdbGUID)
			}
			got++
		}
		if got != 3 || len(pl.recs) != len(in)+3 {
			t.Errorf("reorder %v: %d identities in %d records", reorder, got, len(pl.recs))
		}
		for i := 1; i < len(pl.recs) && reorder; i++ {
			if pl.recs[i].Timestamp < pl.recs[i-1].Timestamp {
				t.Errorf("out of order at %d", i)
			}
		}
		var st event.Stats
		ir.stats(&st)
		for name, v := range map[string]uint64{StatImageIdentities: 3, StatImageUnreadable: 1, StatImageMismatch: 2,
			StatImageNoPDB: 1, StatImageDropped: 0, StatImageUnfinished: 0} {
			if g := st.Get(kindOf(name), name); g != v {
				t.Errorf("reorder %v: %s = %d, want %d", reorder, name, g, v)
			}
		}
	}
}

// TestImageIdentitiesLive: a live trace with --stacks reads the images the
// session reports, counted in the trailer; without --stacks no file is
// opened.
func TestImageIdentitiesLive(t *testing.T) {
	pe, id := testPE(t)
	for _, stacks := range []backend.Stacks{backend.StacksBoth, backend.StacksNone} {
		f := newFakeAPI()
		f.imageFiles = map[string][]byte{`C:\app\mod.exe`: pe}
		f.mainEvents = []record.Record{
			imageRecord(kernel.OpcodeImageLoad, 10, 900, 0x140000000, uint64(id.SizeOfImage), id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`),
			imageRecord(kernel.OpcodeImageLoad, 20, 900, 0x150000000, 0x1000, 5, `\Device\HarddiskVolume3\app\gone.dll`),
		}
		sink := &memSink{}
		if err := runFake(t, f, Config{}, backend.Options{Stacks: stacks}, sink, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		st := sink.trailer.Stats
		if stacks == backend.StacksNone {
			if len(f.opened) != 0 || st.Get(event.CountInfo, StatImageIdentities) != 0 {
				t.Errorf("without --stacks: opened %v", f.opened)
			}
			continue
		}
		if st.Get(event.CountInfo, StatImageIdentities) != 1 || st.Get(event.CountUnresolved, StatImageUnreadable) != 1 {
			t.Errorf("stats %+v", st)
		}
	}
}

// BenchmarkImageIdentity measures one image lookup: a load of an image
// version read already (its path, PE time stamp and size: no file
// touched, as for the thousands of DLL loads of a session's start), a
// load whose event gives no time stamp of a file read already (open and
// stat), and a first read (PE headers and debug directory).
func BenchmarkImageIdentity(b *testing.B) {
	pe, id := testPE(b)
	f := newFakeAPI()
	f.imageFiles = map[string][]byte{`C:\app\mod.exe`: pe}
	r := imageRecord(kernel.OpcodeImageLoad, 10, 900, 0x140000000, uint64(id.SizeOfImage), id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`)
	noStamp := imageRecord(kernel.OpcodeImageLoad, 10, 900, 0x140000000, uint64(id.SizeOfImage), 0, `\Device\HarddiskVolume3\app\mod.exe`)
	for _, c := range []struct {
		name  string
		r     *record.Record
		clear bool
	}{{"version", &r, false}, {"file", &noStamp, false}, {"first", &r, true}} {
		b.Run(c.name, func(b *testing.B) {
			ir := newImageResolver(f, f.vols)
			for i := 0; i < b.N; i++ {
				if c.clear {
					clear(ir.cache)
					clear(ir.byVersion)
				}
				if ir.lookupNow(c.r) == nil {
					b.Fatal("no identity")
				}
			}
		})
	}
}

// TestRecordETLOwnEvents: record -o t.etl writes the volume map into the
// recording session as it starts and, with --stacks, the identity of each
// image its companion session reports (loaded before or during the
// recording), all as iotrace's own provider events that ownprovider
// decodes; the companion is stopped with the recording. A kernel session
// refuses TraceEvent (as documented for the NT Kernel Logger): the events
// then go through iotrace's provider, enabled on the session, and the
// warnings say so; where TraceEvent is taken, they go that way.
func TestRecordETLOwnEvents(t *testing.T) {
	pe, id := testPE(t)
	for _, c := range []struct {
		name         string
		stacks       backend.Stacks
		traceEventOK bool
	}{{"stacks", backend.StacksBoth, false}, {"no stacks", backend.StacksNone, false}, {"TraceEvent taken", backend.StacksBoth, true}} {
		f := newFakeAPI()
		f.traceEventOK = c.traceEventOK
		f.vols = map[string]string{`\Device\HarddiskVolume3`: "C:", `\Device\HarddiskVolume1`: "D:"}
		f.imageFiles = map[string][]byte{`C:\app\mod.exe`: pe}
		f.imageEvents = []record.Record{
			imageRecord(kernel.OpcodeImageDCStart, 10, 900, 0x140000000, uint64(id.SizeOfImage), id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`),
			imageRecord(kernel.OpcodeImageLoad, 20, 901, 0x7ff600000000, 0x9000, 5, `\Device\HarddiskVolume3\app\gone.dll`),
			imageRecord(kernel.OpcodeImageLoad, 30, 902, 0x150000000, uint64(id.SizeOfImage), id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`),
		}
		var warns []string
		opts := backend.Options{Stacks: c.stacks, Duration: time.Millisecond, Warn: func(s string) { warns = append(warns, s) }}
		if _, err := New(Config{API: f}).RecordETL(context.Background(), opts, `C:\t\own.etl`); err != nil {
			t.Fatal(err)
		}
		rec := SessionName(4242)
		via := "EventWrite"
		if c.traceEventOK {
			via = "TraceEvent"
		}
		var vols []ownprovider.Volume
		var imgs []ownprovider.Image
		for _, e := range f.traced {
			if e.session != rec || e.guid != MarkerGUID || e.via != via {
				t.Fatalf("%s: own event into %q (%v) by %s", c.name, e.session, e.guid, e.via)
			}
			switch e.opcode {
			case ownprovider.OpcodeVolume:
				v, err := ownprovider.DecodeVolume(e.data)
				if err != nil {
					t.Fatal(err)
				}
				vols = append(vols, v)
			case ownprovider.OpcodeImage:
				im, err := ownprovider.DecodeImage(e.data)
				if err != nil {
					t.Fatal(err)
				}
				imgs = append(imgs, im)
			default:
				t.Fatalf("opcode %d", e.opcode)
			}
		}
		if len(vols) != 2 || vols[0] != (ownprovider.Volume{NtPath: `\Device\HarddiskVolume1`, DosPath: "D:"}) ||
			vols[1] != (ownprovider.Volume{NtPath: `\Device\HarddiskVolume3`, DosPath: "C:"}) {
			t.Errorf("%s: volumes %+v", c.name, vols)
		}
		companion := false
		for _, s := range f.started {
			companion = companion || s.Name == ImagesName(4242)
			if s.Name == ImagesName(4242) && (s.LogFile != "" || s.EnableFlags != FlagImageLoad || s.Guid != sessionGUID(kindImages, 0)) {
				t.Errorf("companion session %+v", s)
			}
		}
		if len(f.sessions) != 0 {
			t.Errorf("%s: sessions left running: %v", c.name, f.sessions)
		}
		all := strings.Join(warns, "\n")
		if refused := strings.Contains(all, "refused TraceEvent"); refused == c.traceEventOK {
			t.Errorf("%s: warnings %q", c.name, warns)
		}
		if c.stacks == backend.StacksNone {
			if companion || len(imgs) != 0 {
				t.Errorf("%s: companion %v, %d identities", c.name, companion, len(imgs))
			}
			continue
		}
		if !companion || len(imgs) != 2 {
			t.Fatalf("%s: companion %v, identities %+v", c.name, companion, imgs)
		}
		sort.Slice(imgs, func(i, j int) bool { return imgs[i].ProcessID < imgs[j].ProcessID })
		for i, w := range []struct {
			pid  uint32
			base uint64
		}{{900, 0x140000000}, {902, 0x150000000}} {
			im := imgs[i]
			if im.ProcessID != w.pid || im.Base != w.base || im.FileName != `\Device\HarddiskVolume3\app\mod.exe` || !im.HasPDB() ||
				im.PdbName != id.PDBName || im.Age != id.PDBAge || im.PdbGUID != record.GUIDFromBytes(id.PDBGUID[:]) {
				t.Errorf("identity %d: %+v", i, im)
			}
		}
		if !strings.Contains(all, "2 image identities written") || !strings.Contains(all, "1 images whose file could not be read") {
			t.Errorf("summary: %q", warns)
		}
	}
}

// FuzzParseImageLoad: any payload of any version and pointer size is
// parsed or refused, never a panic, and what is parsed lies in it.
func FuzzParseImageLoad(f *testing.F) {
	r := imageRecord(kernel.OpcodeImageLoad, 1, 2, 0x140000000, 0x5000, 7, `\Device\HarddiskVolume3\a.dll`)
	f.Add(r.UserData, uint16(3), uint8(8))
	f.Add(r.UserData[:40], uint16(1), uint8(4))
	f.Fuzz(func(t *testing.T, b []byte, version uint16, ptr uint8) {
		rec := record.Record{Provider: kernel.GUIDImage, Opcode: kernel.OpcodeImageDCStart, Version: version, PointerSize: int(ptr), UserData: b}
		im, ok := parseImageLoad(&rec)
		if ok && (im.name == "" || 2*len([]rune(im.name)) > len(b)) {
			t.Fatalf("name %q from %d bytes", im.name, len(b))
		}
	})
}

// TestMarkSkipsHelperSessions: `iotrace mark` counts and reaches the
// recording or tracing session, never its rundown or image-load
// companions (they do not enable iotrace's provider).
func TestMarkSkipsHelperSessions(t *testing.T) {
	f := newFakeAPI()
	for i, name := range []string{SessionName(4242), RundownName(4242), ImagesName(4242)} {
		h, err := f.StartTrace(&SessionConfig{Name: name, LogFile: `C:\t\` + name + ".etl", Guid: sessionGUID(kindMain, i)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			enableOwn(f, h, name, func(s string) { t.Error(s) })
		}
	}
	n, err := SendMark(f, "m")
	if err != nil || n != 1 || len(f.traced) != 1 || f.traced[0].session != SessionName(4242) {
		t.Fatalf("marked %d (%v): %+v", n, err, f.traced)
	}
}

// TestRecordETLNoCompanion: when Windows has no kernel session left for
// the image-load companion, the recording goes on, with the volume map,
// and says that the identities are not recorded.
func TestRecordETLNoCompanion(t *testing.T) {
	f := newFakeAPI()
	f.startErrs[ImagesName(4242)] = []error{ErrNoSystemResources}
	var warns []string
	opts := backend.Options{Stacks: backend.StacksBoth, Duration: time.Millisecond, Warn: func(s string) { warns = append(warns, s) }}
	if _, err := New(Config{API: f}).RecordETL(context.Background(), opts, `C:\t\n.etl`); err != nil {
		t.Fatal(err)
	}
	if len(f.traced) != 1 || f.traced[0].opcode != ownprovider.OpcodeVolume || len(f.sessions) != 0 {
		t.Errorf("traced %+v, sessions %v", f.traced, f.sessions)
	}
	if all := strings.Join(warns, "\n"); !strings.Contains(all, "image identities not recorded") || !strings.Contains(all, "kernel sessions") {
		t.Errorf("warnings %q", warns)
	}
}

// TestImageHeldForItsIdentity: when reading an image's file takes longer
// than the reorder window, the image (and what follows it) is held for
// one more window so that its identity still comes right after it; past
// that, it goes on without and a late identity is counted once (not
// passed on, not counted late by the reorderer).
func TestImageHeldForItsIdentity(t *testing.T) {
	pe, id := testPE(t)
	size := uint64(id.SizeOfImage)
	for _, slow := range []bool{false, true} {
		f := newFakeAPI()
		f.imageFiles = map[string][]byte{`C:\app\mod.exe`: pe}
		f.openGate = make(chan struct{})
		in := []record.Record{
			imageRecord(kernel.OpcodeImageLoad, 100, 900, 0x140000000, size, id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`),
			imageRecord(kernel.OpcodeImageUnload, 200, 900, 0x140000000, size, id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`),
		}
		q := newQueue(16)
		for i := range in {
			deliver(q, &in[i])
		}
		// The session clock stands past the window of both records
		// (1000 ticks), within the extra window; slow: past it too.
		clock := int64(1500)
		if slow {
			clock = 5000
		}
		ro := newReorderer(1000, 0)
		ir := newImageResolver(f, f.vols)
		pl := &recorder{}
		out := newLiveSink(&memSink{}, &event.Header{}, nil, newPidFilter(&backend.Options{}, 4242))
		done := make(chan error, 1)
		go func() { done <- consume(q, ro, func() int64 { return clock }, pl, out, nil, ir, 5*time.Second) }()
		// Several release ticks with the file still unread (slow: until
		// both records are out).
		held := 0
		for start := time.Now(); ; {
			time.Sleep(reorderTick)
			pl.mu.Lock()
			held = len(pl.recs)
			pl.mu.Unlock()
			waited := time.Since(start)
			if slow && held == 2 || !slow && waited >= 3*reorderTick || waited > 10*time.Second {
				break
			}
		}
		close(f.openGate)
		time.Sleep(3 * reorderTick)
		q.closeWork()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var got []uint8
		for _, r := range pl.recs {
			got = append(got, r.Opcode)
		}
		var st event.Stats
		ir.stats(&st)
		late := st.Get(event.CountUnresolved, StatImageLate)
		if !slow {
			want := []uint8{kernel.OpcodeImageLoad, ownprovider.OpcodeImage, kernel.OpcodeImageUnload}
			if held != 0 || string(got) != string(want) || late != 0 || ro.gaveUp != 0 {
				t.Errorf("held %d before the answer; order %v, want %v; late %d, gave up %d", held, got, want, late, ro.gaveUp)
			}
			continue
		}
		want := []uint8{kernel.OpcodeImageLoad, kernel.OpcodeImageUnload}
		if held != 2 || string(got) != string(want) || late != 1 || ro.gaveUp != 1 || ro.late != 0 {
			t.Errorf("slow: released %d before the answer; order %v, want %v; late %d, gave up %d, reorder late %d", held, got, want, late, ro.gaveUp, ro.late)
		}
	}
}

// TestImageIdentityReachesModule: in a live trace with --stacks, the
// identity injected after an Image Load goes to the pipeline (only
// markers go to the sink as markers), so the module fact carries the PDB
// identity of the image's file.
func TestImageIdentityReachesModule(t *testing.T) {
	pe, id := testPE(t)
	f := newFakeAPI()
	f.imageFiles = map[string][]byte{`C:\app\mod.exe`: pe}
	f.mainEvents = []record.Record{
		imageRecord(kernel.OpcodeImageLoad, 10, 900, 0x140000000, uint64(id.SizeOfImage), id.TimeDateStamp, `\Device\HarddiskVolume3\app\mod.exe`),
	}
	sink := &memSink{}
	if err := runFake(t, f, Config{}, backend.Options{Stacks: backend.StacksBoth}, sink, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := symbolize.PDBID(id.PDBName, id.PDBGUID, id.PDBAge)
	var mods []event.Fact
	for _, x := range sink.facts {
		if x.Kind == event.FactModule {
			mods = append(mods, x)
		}
	}
	if len(mods) != 1 || mods[0].Image != want || mods[0].Handle != 0x140000000 || mods[0].Pid != 900 || mods[0].Name != `C:\app\mod.exe` {
		t.Fatalf("module facts %+v, want one with image %s", mods, want)
	}
	for _, e := range sink.events {
		if e.Op == event.OpMarker {
			t.Errorf("identity delivered as a marker: %+v", e)
		}
	}
	st := sink.trailer.Stats
	if st.Get(event.CountInfo, etw.StatModulesPDB) != 1 || st.Get(event.CountUnresolved, etw.StatIdentityNoImage) != 0 {
		t.Errorf("stats %v", st.Sorted())
	}
}

// TestImageRundownBurst: on a desktop the image-load companion of a
// recording starts with one Image DCStart per module of every process
// (here 200 processes with the same 100 DLLs), all logged before
// anything drains it: its buffers hold them (none lost), each DLL
// version's file is read once, every load gets its identity, none is
// dropped. With buffers too small to hold the burst, what the session
// lost is said.
func TestImageRundownBurst(t *testing.T) {
	pe, id := testPE(t)
	burst := func(f *fakeAPI) {
		f.imageFiles = map[string][]byte{}
		for d := 0; d < 100; d++ {
			f.imageFiles[fmt.Sprintf(`C:\Windows\System32\lib%02d.dll`, d)] = pe
		}
		for p := uint32(0); p < 200; p++ {
			for d := 0; d < 100; d++ {
				f.imageEvents = append(f.imageEvents, imageRecord(kernel.OpcodeImageDCStart, 10, 1000+p, 0x7ff800000000+uint64(d)<<20,
					uint64(id.SizeOfImage), id.TimeDateStamp, fmt.Sprintf(`\Device\HarddiskVolume3\Windows\System32\lib%02d.dll`, d)))
			}
		}
	}
	for _, small := range []bool{false, true} {
		f := newFakeAPI()
		f.traceEventOK = true
		burst(f)
		var warns []string
		opts := backend.Options{Stacks: backend.StacksBoth, Duration: 300 * time.Millisecond, Warn: func(s string) { warns = append(warns, s) }}
		cfg := Config{API: f}
		if small {
			cfg.BufferSizeKB = MinBufferKB
		}
		if _, err := New(cfg).RecordETL(context.Background(), opts, `C:\t\burst.etl`); err != nil {
			t.Fatal(err)
		}
		all := strings.Join(warns, "\n")
		imgs := len(f.ownTraced(SessionName(4242))[ownprovider.OpcodeImage])
		if small {
			if !strings.Contains(all, "the image-load session lost") || imgs == 20000 {
				t.Errorf("small buffers: %d identities; warnings %q", imgs, warns)
			}
			continue
		}
		if imgs != 20000 || !strings.Contains(all, "20000 image identities written") || strings.Contains(all, "lost") || strings.Contains(all, "dropped") {
			t.Errorf("%d identities written; warnings %q", imgs, warns)
		}
		if len(f.opened) != 100 {
			t.Errorf("%d image files opened for 100 DLL versions", len(f.opened))
		}
	}
}
