package ebpf

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// requireTool skips (or, where privileged tests are required, fails) when
// a tool the test runs is missing.
func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if testenv.Required() {
			t.Fatalf("%s not installed (scripts/setup installs it)", name)
		}
		t.Skipf("%s not installed (scripts/setup installs it)", name)
	}
}

// traceCmd traces args for the layers given.
func traceCmd(t *testing.T, args []string, layers ...event.Layer) *memSink {
	t.Helper()
	sink := &memSink{}
	opts := backend.Options{Command: args, Layers: layers, Warn: func(m string) { t.Logf("warn: %s", m) }}
	if err := New(Config{MarkerDir: "-"}).Run(context.Background(), opts, sink); err != nil {
		t.Fatal(err)
	}
	return sink
}

// buildC compiles the C program src (under testdata) with gcc and the
// flags given (-O2 -Wall when none) into a new directory, and returns it.
func buildC(t *testing.T, src string, flags ...string) string {
	t.Helper()
	requireTool(t, "gcc")
	if len(flags) == 0 {
		flags = []string{"-O2", "-Wall"}
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c"))
	out, err := exec.Command("gcc", append(flags, "-o", bin, src)...).CombinedOutput()
	if err != nil {
		t.Fatalf("build %s: %v\n%s", src, err, out)
	}
	return bin
}

// buildAIO compiles testdata/aio/aio.c.
func buildAIO(t *testing.T) string { return buildC(t, "testdata/aio/aio.c") }

// checkCauses checks that every read's block I/O links to it: the bios
// whose Cause is the read's ID carry its bytes, come from its process and
// are block reads, and the read counts them.
func checkCauses(t *testing.T, sink *memSink, reads []event.Event) {
	t.Helper()
	sink.logUnseen(t)
	bytes := map[uint64]uint64{}
	ios := map[uint64]uint32{}
	byID := map[uint64]*event.Event{}
	for i := range reads {
		byID[reads[i].ID] = &reads[i]
	}
	for _, e := range sink.events {
		if e.Layer != event.LayerBlock || e.Cause == 0 {
			continue
		}
		r := byID[e.Cause]
		if r == nil {
			continue
		}
		bytes[r.ID] += e.Size
		ios[r.ID]++
		if e.Process() != r.Process() || e.Op != event.OpBlockRead {
			t.Errorf("bio %d (op %v, process %+v) caused by read %d of process %+v", e.ID, e.Op, e.Process(), r.ID, r.Process())
		}
	}
	bad := false
	for _, r := range reads {
		if bytes[r.ID] != uint64(r.Bytes) || r.CausedBytes != bytes[r.ID] || r.CausedIOs != ios[r.ID] || r.CausedIOs == 0 {
			t.Errorf("%s at offset %d (%d bytes, id %#x): its bios carry %d bytes in %d I/Os; it says it caused %d bytes in %d",
				r.Native, r.Offset, r.Bytes, r.ID, bytes[r.ID], ios[r.ID], r.CausedBytes, r.CausedIOs)
			bad = true
		}
	}
	if bad {
		for _, e := range sink.events {
			if e.Layer == event.LayerBlock && e.Pid == reads[0].Pid {
				t.Logf("block event %#x: cause %#x, %s, sector %d, %d bytes, flags %s", e.ID, e.Cause, e.Op, e.Sector, e.Size, e.Flags)
			}
		}
		t.Logf("stats: %+v", sink.trailer.Stats.Sorted())
	}
}

// TestAIOFioDirectReads: fio's libaio engine reads a file with O_DIRECT in
// 4 KiB requests, 4 in flight: each request is one file event with the
// file's path, offset, size, result and latency, and its block I/O links
// to it.
func TestAIOFioDirectReads(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	requireTool(t, "fio")
	f := filepath.Join(t.TempDir(), "data")
	sink := traceCmd(t, []string{"fio", "--name=aio", "--ioengine=libaio", "--direct=1", "--rw=read", "--bs=4k",
		"--size=256k", "--filename=" + f, "--iodepth=4", "--output=/dev/null"}, event.LayerFile, event.LayerBlock)
	reads := find(sink.events, byNative("aio/PREAD"), byPath(f))
	const n = 64
	if len(reads) != n {
		t.Fatalf("%d aio/PREAD events on %s, want %d", len(reads), f, n)
	}
	offsets := map[int64]bool{}
	for _, r := range reads {
		if r.Op != event.OpRead || r.Bytes != 4096 || r.Size != 4096 || r.Duration <= 0 || r.Flags&event.FlagDirect == 0 || r.Status != event.StatusOK {
			t.Errorf("read %+v: want a direct 4096-byte read with a latency", r)
		}
		offsets[r.Offset] = true
	}
	if len(offsets) != n {
		t.Errorf("%d distinct offsets, want %d", len(offsets), n)
	}
	checkCauses(t, sink, reads)
	if s := sink.trailer.Stats; s.Get(event.CountUnpaired, "AIO completions reaped without their submission (submitted before tracing, or not read at submission)") != 0 {
		t.Errorf("unpaired AIO completions: %+v", s)
	}
}

// TestAIOBatch: one io_submit of 8 reads: 8 events, each with its own
// block I/O (told apart by iomap's per-request boundaries).
func TestAIOBatch(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	bin := buildAIO(t)
	f, _ := coldFile(t, 64<<10)
	sink := traceCmd(t, []string{bin, f, "batch"}, event.LayerFile, event.LayerBlock)
	reads := find(sink.events, byNative("aio/PREAD"), byPath(f))
	if len(reads) != 8 {
		t.Fatalf("%d aio/PREAD events, want 8", len(reads))
	}
	checkCauses(t, sink, reads)
}

// TestAIOPartialSubmit: io_submit takes the first of two iocbs (the
// second names a bad descriptor): one event, none for the iocb the kernel
// refused, nothing left unreaped.
func TestAIOPartialSubmit(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	bin := buildAIO(t)
	f, _ := coldFile(t, 64<<10)
	sink := traceCmd(t, []string{bin, f, "partial"}, event.LayerFile)
	var aio []event.Event
	for _, e := range sink.events {
		if strings.HasPrefix(e.Native, "aio/") {
			aio = append(aio, e)
		}
	}
	if len(aio) != 1 || aio[0].Path != f || aio[0].Offset != 0 || aio[0].Bytes != 4096 || aio[0].Flags&event.FlagNoCompletion != 0 {
		t.Fatalf("AIO events %+v, want one complete read of %s at offset 0", aio, f)
	}
	for _, c := range sink.trailer.Stats.Counters {
		if strings.HasPrefix(c.Name, "AIO") && c.Value != 0 {
			t.Errorf("counter %q = %d, want none", c.Name, c.Value)
		}
	}
}

// TestAIOUnreaped: a read submitted and never reaped (the process exits)
// is an event without completion, named, and counted.
func TestAIOUnreaped(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	bin := buildAIO(t)
	f, _ := coldFile(t, 64<<10)
	sink := traceCmd(t, []string{bin, f, "unreaped"}, event.LayerFile)
	reads := find(sink.events, byNative("aio/PREAD"), byPath(f))
	if len(reads) != 1 || reads[0].Flags&event.FlagNoCompletion == 0 || reads[0].Status != event.StatusUnknown {
		t.Fatalf("reads %+v, want one without completion", reads)
	}
	const name = "AIO requests never reaped: their process exited first"
	if got := sink.trailer.Stats.Get(event.CountUnpaired, name); got != 1 {
		t.Errorf("%q = %d, want 1", name, got)
	}
}

// TestAIORecordLayout: the decoder reads struct aio_rec where the
// generated type (the in-flight map's value) has its fields.
func TestAIORecordLayout(t *testing.T) {
	var v iotraceAioRec
	v.H.Type, v.H.Cpu, v.H.Time = recAIO, 3, 4
	v.Id, v.Dur, v.Pid, v.Tid = 5, 6, 7, 8
	v.Data, v.Iocb, v.Off, v.Res, v.Nbytes, v.Ctx = 9, 10, 11, -12, 13, 14
	v.BioBytes, v.NrBios, v.Fd, v.Opcode, v.Caused, v.Aflags, v.Fflags = 15, 16, 17, 18, 1, afHaveFile, 20
	v.Comm[0], v.Comm[15] = 'a', 'z'
	v.Ino, v.Dev = 21, 22
	r, err := aioRecOf(&v)
	if err != nil {
		t.Fatal(err)
	}
	want := aioRec{header: header{Type: recAIO, CPU: 3, Time: 4}, ID: 5, Dur: 6, Pid: 7, Tid: 8, Data: 9, IOCB: 10,
		Off: 11, Res: -12, NBytes: 13, Ctx: 14, BioBytes: 15, NrBios: 16, FD: 17, Opcode: 18, Caused: true,
		AFlags: afHaveFile, FFlags: 20, Ino: 21, Dev: 22}
	want.Comm[0], want.Comm[15] = 'a', 'z'
	if r != want {
		t.Errorf("decoded %+v\nwant    %+v", r, want)
	}
}

// TestAIOFioDirectWrites: the same with random O_DIRECT writes: each
// aio/PWRITE request is an event and its block writes link to it.
func TestAIOFioDirectWrites(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	requireTool(t, "fio")
	f := filepath.Join(t.TempDir(), "data")
	sink := traceCmd(t, []string{"fio", "--name=aio", "--ioengine=libaio", "--direct=1", "--rw=randwrite", "--bs=4k",
		"--size=256k", "--filename=" + f, "--iodepth=8", "--output=/dev/null"}, event.LayerFile, event.LayerBlock)
	writes := find(sink.events, byNative("aio/PWRITE"), byPath(f))
	if len(writes) != 64 {
		t.Fatalf("%d aio/PWRITE events on %s, want 64", len(writes), f)
	}
	ids := map[uint64]bool{}
	for _, w := range writes {
		ids[w.ID] = true
		if w.Op != event.OpWrite || w.Bytes != 4096 || w.CausedIOs == 0 || w.CausedBytes != 4096 {
			t.Errorf("write at %d: op %v bytes %d caused %d I/Os, %d bytes", w.Offset, w.Op, w.Bytes, w.CausedIOs, w.CausedBytes)
		}
	}
	n := 0
	for _, e := range sink.events {
		if e.Layer == event.LayerBlock && ids[e.Cause] {
			n++
			if e.Op != event.OpBlockWrite {
				t.Errorf("bio %d caused by an AIO write is a %v", e.ID, e.Op)
			}
		}
	}
	if n < 64 {
		t.Errorf("%d bios linked to the 64 writes", n)
	}
}
