package rotate

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/input"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/resolve"
	"github.com/iotrace/iotrace/tracefile"
)

// clock advances by step at every call.
type clock struct {
	t    time.Time
	step time.Duration
}

func (c *clock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

// resolvedPaths resolves tr as one stream and returns each event's path by
// id.
func resolvedPaths(t *testing.T, tr *synth.Recorded) map[uint64]string {
	t.Helper()
	rec := synth.NewRecorder()
	if err := tr.Replay(resolve.NewResolver(rec)); err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for _, e := range rec.Trace().Events {
		out[e.ID] = e.Path
	}
	return out
}

// readFile reads one file of a series on its own.
func readFile(t *testing.T, path string) *synth.Recorded {
	t.Helper()
	r, err := input.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := synth.NewRecorder()
	if err := r.Run(context.Background(), rec); err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	return rec.Trace()
}

func TestSeries(t *testing.T) {
	tr := synth.Trace(synth.Options{Seed: 5, Events: 20000, BlockPercent: 10})
	want := resolvedPaths(t, tr)
	dir := testenv.TempDir(t)
	clk := &clock{t: time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC), step: 5 * time.Millisecond}
	var done []string
	s, err := New(Options{Dir: dir, Prefix: "rec", Every: 10 * time.Second, Now: clk.now,
		OnFile: func(p string, _ uint64) { done = append(done, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(s); err != nil {
		t.Fatal(err)
	}
	files, err := Files(dir, "rec", tr.Header.Hostname)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 || len(done) != len(files) {
		t.Fatalf("%d files (%d reported done), want several: %v", len(files), len(done), files)
	}
	seen := map[uint64]int{}
	var wrong, named int
	for i, f := range files {
		if !strings.HasPrefix(filepath.Base(f), "rec-"+tr.Header.Hostname+"-20261125T05") {
			t.Errorf("file name %s", filepath.Base(f))
		}
		if st, err := os.Stat(f); err != nil || (runtime.GOOS != "windows" && st.Mode().Perm() != 0o600) {
			t.Errorf("%s: %v, %v", f, st, err)
		}
		part := readFile(t, f)
		if !part.Ended {
			t.Errorf("%s: no trailer", f)
		}
		if got := part.Trailer.Stats.Get(event.CountInfo, CounterPart); got != uint64(i+1) {
			t.Errorf("%s: part %d, want %d", f, got, i+1)
		}
		if got := part.Trailer.Stats.Get(event.CountInfo, CounterEvents); got != uint64(len(part.Events)) {
			t.Errorf("%s: trailer counts %d events, file holds %d", f, got, len(part.Events))
		}
		for _, e := range part.Events {
			seen[e.ID]++
			if w := want[e.ID]; w != "" {
				named++
				if e.Path != w {
					wrong++
					if wrong < 5 {
						t.Errorf("%s: event %d named %q on its own, %q in the whole trace", filepath.Base(f), e.ID, e.Path, w)
					}
				}
			}
		}
	}
	for _, e := range tr.Events {
		if seen[e.ID] != 1 {
			t.Fatalf("event %d is in %d files, want exactly 1", e.ID, seen[e.ID])
		}
	}
	if len(seen) != len(tr.Events) || wrong > 0 || named == 0 {
		t.Errorf("%d events in the files of %d; %d of %d named events named differently", len(seen), len(tr.Events), wrong, named)
	}
	last := readFile(t, files[len(files)-1])
	for _, c := range tr.Trailer.Stats.Counters {
		if last.Trailer.Stats.Get(c.Kind, c.Name) != c.Value {
			t.Errorf("last file's trailer lacks the recording's counter %q = %d", c.Name, c.Value)
		}
	}
}

func TestSeriesBySizeAndRetention(t *testing.T) {
	tr := synth.Trace(synth.Options{Seed: 6, Events: 30000})
	dir := testenv.TempDir(t)
	// A file of an earlier recording of the same series, and one of another
	// series: retention counts the first, never touches the second.
	host := tr.Header.Hostname
	old := filepath.Join(dir, host+"-20200101T000000.000Z.iot")
	other := filepath.Join(dir, "other-20200101T000000.000Z.iot")
	writeTrace(t, old, host, tr.Header.StartWall-int64(time.Hour))
	writeTrace(t, other, "other", tr.Header.StartWall-int64(time.Hour))
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: time.Microsecond}
	s, err := New(Options{Dir: dir, MaxBytes: 64 << 10, Keep: 3, Now: clk.now, Writer: tracefileOpts()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(s); err != nil {
		t.Fatal(err)
	}
	files, _ := Files(dir, "", host)
	if len(files) != 3 {
		t.Fatalf("%d files kept, want 3: %v", len(files), files)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Error("the earlier recording's file was not removed")
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("another series' file was removed")
	}
	last := readFile(t, files[2])
	if last.Trailer.Stats.Get(event.CountInfo, CounterRemoved) == 0 {
		t.Error("removed files not counted")
	}
	for _, f := range files[:2] {
		st, _ := os.Stat(f)
		if st.Size() < 64<<10 || st.Size() > 64<<10+512<<10 {
			t.Errorf("%s: %d bytes for a 64 KiB limit", f, st.Size())
		}
	}

	// MaxTotal: the oldest go until the series fits.
	dir2 := testenv.TempDir(t)
	s, err = New(Options{Dir: dir2, MaxBytes: 64 << 10, MaxTotal: 300 << 10, Now: clk.now, Writer: tracefileOpts()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(s); err != nil {
		t.Fatal(err)
	}
	files, _ = Files(dir2, "", host)
	var total int64
	for _, f := range files[:len(files)-1] { // the current file may pass the limit
		st, _ := os.Stat(f)
		total += st.Size()
	}
	if len(files) < 2 || total > 300<<10 {
		t.Errorf("%d files, %d bytes before the last (limit %d)", len(files), total, 300<<10)
	}
}

func TestSeriesOptions(t *testing.T) {
	dir := testenv.TempDir(t)
	for name, o := range map[string]Options{
		"no limit":  {Dir: dir},
		"negative":  {Dir: dir, Every: -time.Second},
		"no dir":    {Dir: filepath.Join(dir, "missing"), Every: time.Second},
		"separator": {Dir: dir, Every: time.Second, Prefix: "a/b"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if runtime.GOOS == "windows" {
		return // symbolic links need a privilege there
	}
	// A symlink where the next file would go is never written through.
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "h-20260101T000000.000Z.iot")); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Dir: dir, Host: "h", Every: time.Hour, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	tr := synth.Trace(synth.Options{Seed: 7, Events: 100})
	if err := tr.Replay(s); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Error("wrote through a symlink")
	}
	if !strings.HasSuffix(s.Path(), "000.001Z.iot") {
		t.Errorf("file %s: want the next free name", s.Path())
	}
}

func tracefileOpts() (o tracefile.WriterOptions) { o.ChunkSize = 16 << 10; return o }

// writeTrace writes a small trace at path recorded on host, starting at
// start (Header.StartWall).
func writeTrace(t *testing.T, path, host string, start int64) {
	t.Helper()
	tr := synth.Trace(synth.Options{Seed: 9, Events: 10})
	tr.Header.Hostname, tr.Header.StartWall = host, start
	w, err := tracefile.Create(path, tracefile.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRetentionOwnsItsFiles: --keep and --max-total remove only the
// series' own files (issue 25, item 6). A text file, a trace of another
// host and a file of another user named like the series stay and are
// not counted; a trace dated after this recording (a planted name from
// the future) does not make this recording's files count as older; a
// clock stepped back during the recording does not make it remove its
// newer files.
func TestRetentionOwnsItsFiles(t *testing.T) {
	tr := synth.Trace(synth.Options{Seed: 6, Events: 30000})
	host := tr.Header.Hostname
	dir := testenv.TempDir(t)
	name := func(ts string) string { return filepath.Join(dir, host+"-"+ts+".iot") }
	text := name("20200101T000000.000Z")
	if err := os.WriteFile(text, []byte("not a trace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	otherHost := name("20200101T000001.000Z")
	writeTrace(t, otherHost, "elsewhere", tr.Header.StartWall-int64(time.Hour))
	future := name("29991231T235959.000Z")
	writeTrace(t, future, host, tr.Header.StartWall+int64(100*365*24*time.Hour))
	earlier := name("20200101T000002.000Z")
	writeTrace(t, earlier, host, tr.Header.StartWall-int64(time.Hour))
	var foreign string
	if os.Geteuid() == 0 && runtime.GOOS != "windows" {
		foreign = name("20200101T000003.000Z")
		writeTrace(t, foreign, host, tr.Header.StartWall-int64(time.Hour))
		if err := os.Chown(foreign, 12345, 12345); err != nil {
			t.Fatal(err)
		}
	}
	// The clock goes back an hour after a few files.
	clk := &steppedClock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	var written []string
	s, err := New(Options{Dir: dir, MaxBytes: 64 << 10, Keep: 3, Now: clk.now, Writer: tracefileOpts(),
		OnFile: func(p string, _ uint64) { written = append(written, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Replay(s); err != nil {
		t.Fatal(err)
	}
	if len(written) < 6 {
		t.Fatalf("%d files written, want several", len(written))
	}
	for _, p := range []string{text, otherHost, future, foreign} {
		if _, err := os.Stat(p); p != "" && err != nil {
			t.Errorf("%s, not the series' own, was removed", filepath.Base(p))
		}
	}
	if _, err := os.Stat(earlier); !os.IsNotExist(err) {
		t.Error("the earlier recording's file was kept past --keep 3")
	}
	// The newest 3 of this recording's files, in the order written
	// (their names are not: the clock went back), are what is left of it.
	for i, p := range written {
		_, err := os.Stat(p)
		if kept := err == nil; kept != (i >= len(written)-3) {
			t.Errorf("file %d of %d (%s): kept %v", i+1, len(written), filepath.Base(p), kept)
		}
	}
}

// steppedClock advances by a millisecond a call, and steps back an hour
// at its 20th call.
type steppedClock struct {
	t     time.Time
	calls int
}

func (c *steppedClock) now() time.Time {
	c.calls++
	c.t = c.t.Add(time.Millisecond)
	if c.calls == 20 {
		c.t = c.t.Add(-time.Hour)
	}
	return c.t
}
