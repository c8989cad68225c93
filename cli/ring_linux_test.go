package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend/ebpf/marker"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/ring"
	"github.com/iotrace/iotrace/tracefile"
)

// The flight recorder's workload (run as the traced command by
// TestFlightRecorder, through this test binary): it opens DATA once, then
// preads one byte at offsets 0..N-1, creates DIR/phase1, waits for
// DIR/go, preads offsets N..N+M-1 and exits. The offset of each pread is
// its sequence number, so the test knows which events are the most recent.
const ringWorkloadEnv = "IOTRACE_RING_WORKLOAD"

const ringPhase1, ringPhase2 = 20000, 10000

func init() { testChildren[ringWorkloadEnv] = ringWorkload }

func ringWorkload(dir string) int {
	f, err := os.Open(filepath.Join(dir, "data"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b := make([]byte, 1)
	for i := 0; i < ringPhase1; i++ {
		f.ReadAt(b, int64(i))
	}
	os.WriteFile(filepath.Join(dir, "phase1"), nil, 0o600)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
	}
	for i := ringPhase1; i < ringPhase1+ringPhase2; i++ {
		f.ReadAt(b, int64(i))
	}
	f.Close()
	return 0
}

// workloadComm is the comm of this test binary (cut to 15 bytes).
func workloadComm() string {
	c := filepath.Base(os.Args[0])
	if len(c) > 15 {
		c = c[:15]
	}
	return c
}

// readIOT reads a .iot file as written (no resolution).
func readIOT(t *testing.T, path string) *synth.Recorded {
	t.Helper()
	r, err := tracefile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := synth.NewRecorder()
	if err := r.Run(context.Background(), rec); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return rec.Trace()
}

// complete reports whether path is a whole .iot file (trailer read, no
// damage).
func complete(path string) bool {
	r, err := tracefile.Open(path)
	if err != nil {
		return false
	}
	defer r.Close()
	rec := synth.NewRecorder()
	return r.Run(context.Background(), rec) == nil && len(r.Damage()) == 0 && rec.Trace().Ended
}

// checkRingFile checks a saved flight-recorder file: its preads of data
// are the most recent ones (offsets up to last, contiguous), the window is
// full (the file holds the window as the ring kept it: within four chunks
// of limit, plus the live facts), every pread resolves to data when
// printed, and the overwritten count is there and shown.
func checkRingFile(t *testing.T, path, data string, last int64, limit int) (overwritten, kept uint64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v (mode %v, want 0600)", path, err, fi.Mode())
	}
	if size := int(fi.Size()); size > limit+64<<10 || size < limit-4*ring.ChunkSize(limit) {
		t.Errorf("%s: %d bytes: want the window of a %d-byte ring (within four %d-byte chunks of full)", path, size, limit, ring.ChunkSize(limit))
	}
	tr := readIOT(t, path)
	var offs []int64
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Op == event.OpRead && e.Size == 1 && e.Offset >= 0 && e.Comm == workloadComm() {
			offs = append(offs, e.Offset)
		}
	}
	if len(offs) < 1000 {
		t.Fatalf("%s: only %d preads of the workload kept", path, len(offs))
	}
	if offs[len(offs)-1] != last || offs[0] <= 0 {
		t.Errorf("%s: preads at offsets %d..%d, want the most recent ending at %d", path, offs[0], offs[len(offs)-1], last)
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] != offs[i-1]+1 {
			t.Fatalf("%s: preads not contiguous: offset %d after %d", path, offs[i], offs[i-1])
		}
	}
	overwritten = tr.Trailer.Stats.Get(event.CountLost, ring.OverwrittenCounter)
	kept = tr.Trailer.Stats.Get(event.CountInfo, ring.KeptCounter)
	if kept != uint64(len(tr.Events)) || overwritten < uint64(offs[0]) {
		t.Errorf("%s: kept %d (file has %d events), overwritten %d (at least %d preads were)", path, kept, len(tr.Events), overwritten, offs[0])
	}
	// Names resolve: the fd was opened long before the window, so the
	// file must carry its name fact from before the window.
	hasName := false
	for _, f := range tr.Facts {
		if f.Kind == event.FactName && f.Space == event.SpaceFD && f.Name == data && !f.End {
			hasName = true
		}
	}
	if !hasName {
		t.Errorf("%s: no fd name fact for %s among %d facts", path, data, len(tr.Facts))
	}
	out, stderr, code := runCLI(t, "print", "-f", "jsonl", "--op", "read", "--comm", workloadComm(), path)
	if code != 0 {
		t.Fatalf("print %s: %d %s", path, code, stderr)
	}
	named := 0
	for _, e := range readJSONL(t, out).Events {
		if e.Size != 1 || e.Offset < 0 {
			continue
		}
		if e.Path != data {
			t.Fatalf("%s: pread at %d printed with path %q, want %q", path, e.Offset, e.Path, data)
		}
		named++
	}
	if named != len(offs) {
		t.Errorf("%s: print shows %d preads, the file has %d", path, named, len(offs))
	}
	rep, _, _ := runCLI(t, "report", path)
	if !strings.Contains(rep, ring.OverwrittenCounter) {
		t.Errorf("report of %s does not show the overwritten events:\n%s", path, rep)
	}
	return overwritten, kept
}

// TestFlightRecorder records a workload of known size with --ring 128KiB,
// saves once while it runs with `iotrace mark --save` and once at exit.
func TestFlightRecorder(t *testing.T) {
	testenv.RequirePrivileged(t, "traces with eBPF")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.WriteFile(data, make([]byte, ringPhase1+ringPhase2), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ringWorkloadEnv, dir)
	iot := filepath.Join(dir, "fr.iot")
	if err := os.WriteFile(iot, []byte("an earlier recording"), 0o644); err != nil {
		t.Fatal(err)
	}
	const limit = 128 << 10
	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, code := runCLI(t, "record", "--ring", "128KiB", "-o", iot, "--layer", "file", "--", os.Args[0])
		done <- result{stderr, code}
	}()
	waitFor := func(path string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if fi, err := os.Stat(path); err == nil && fi.Size() > 0 || err == nil && !strings.HasSuffix(path, ".iot") {
				return
			}
			select {
			case r := <-done:
				t.Fatalf("record ended early: %d\n%s", r.code, r.stderr)
			default:
			}
		}
		t.Fatalf("%s never appeared", path)
	}
	waitFor(filepath.Join(dir, "phase1"))
	// What `iotrace mark --save` sends, to this process's recorder only
	// (not to other traces running on the machine).
	only := t.TempDir()
	own := filepath.Join(marker.DefaultDir, strconv.Itoa(os.Getpid())+".sock")
	if err := os.Symlink(own, filepath.Join(only, "own.sock")); err != nil {
		t.Fatal(err)
	}
	if n, err := marker.Send(only, ring.SaveRequestText("phase 1 done")); n != 1 || err != nil {
		t.Fatalf("mark --save reached %d traces: %v", n, err)
	}
	saved := filepath.Join(dir, "fr.1.iot")
	waitFor(saved)
	// The file is complete once its trailer is written.
	for deadline := time.Now().Add(30 * time.Second); !complete(saved); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never complete", saved)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("record did not end")
	}
	if r.code != 0 {
		t.Fatalf("record: %d\n%s", r.code, r.stderr)
	}
	checkRingFile(t, saved, data, ringPhase1-1, limit)
	// --layer file leaves the marker out of the files, not the save.
	overwritten, kept := checkRingFile(t, iot, data, ringPhase1+ringPhase2-1, limit)
	m := regexp.MustCompile(`recorded (\d+) events`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no summary line:\n%s", r.stderr)
	}
	if total, _ := strconv.ParseUint(m[1], 10, 64); overwritten+kept != total {
		t.Errorf("kept %d + overwritten %d != %d events recorded\n%s", kept, overwritten, total, r.stderr)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	if !strings.Contains(r.stderr, "saved the last") {
		t.Errorf("no save message:\n%s", r.stderr)
	}
}

func TestRingSizeErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "--ring", "-o", "x.iot"}, "--ring needs a size"},
		{[]string{"record", "-o", "x.iot", "--ring"}, "needs an argument: --ring"},
		{[]string{"record", "--ring", "lots", "-o", "x.iot"}, `bad size "lots"`},
		{[]string{"record", "--ring", "100", "-o", "x.iot"}, "smaller than the smallest ring (4 KiB)"},
		{[]string{"record", "--ring", "1M", "-o", "x.etl"}, "--ring writes a .iot file"},
	} {
		if _, stderr, code := runCLI(t, c.args...); code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: code %d, %q; want an error with %q", c.args, code, stderr, c.want)
		}
	}
	if _, err := parseRingSize("8G", 8<<30); err == nil || !strings.Contains(err.Error(), "half of this machine's memory") {
		t.Errorf("8G ring on an 8G machine: %v", err)
	}
	if n, err := parseRingSize("1MiB", 8<<30); n != 1<<20 || err != nil {
		t.Errorf("1MiB: %d %v", n, err)
	}
}
