package output

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// TestJSONLCutToLimits: a jsonl trace's stack of 100,000 frames and
// paths of 60 KB (a Linux trace) are cut at decode to
// event.MaxStackFrames (flagged truncated) and PATH_MAX, and counted,
// by the fast decoder and the generic one alike.
func TestJSONLCutToLimits(t *testing.T) {
	deep := make([]uint64, 100_000)
	for i := range deep {
		deep[i] = 0xffffffff81000000 + uint64(i)
	}
	long := "/" + strings.Repeat("x", 60_000)
	tr := &synth.Recorded{Began: true, Ended: true, Header: event.Header{OS: "linux"}}
	tr.Facts = append(tr.Facts, event.Fact{Kind: event.FactStack, Handle: 1, Kernel: deep, User: deep[:10]})
	for i := range 100 {
		e := event.New()
		e.ID, e.Op, e.Path, e.Stack = uint64(i+1), event.OpRead, long, 1
		tr.Events = append(tr.Events, e)
	}
	var buf bytes.Buffer
	if err := tr.Replay(NewJSONL(&buf)); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []readMode{readFast, readGeneric} {
		rec := synth.NewRecorder()
		if err := readJSONL(context.Background(), bytes.NewReader(buf.Bytes()), "t.jsonl", rec, mode); err != nil {
			t.Fatal(err)
		}
		got := rec.Trace()
		f := got.Facts[0]
		if len(f.Kernel) != event.MaxStackFrames || len(f.User) != 10 || f.Flags != event.FactKernelTruncated || f.Kernel[1] != deep[1] {
			t.Errorf("mode %d: stack of %d+%d frames, flags %v", mode, len(f.Kernel), len(f.User), f.Flags)
		}
		for _, e := range got.Events {
			if len(e.Path) != event.MaxPathLinux {
				t.Fatalf("mode %d: path of %d bytes", mode, len(e.Path))
			}
		}
		st := got.Trailer.Stats
		if st.Get(event.CountDropped, event.StatPathsCut) != 100 || st.Get(event.CountDropped, event.StatFramesCut) != uint64(len(deep)-event.MaxStackFrames) {
			t.Errorf("mode %d: cuts not counted: %+v", mode, st.Counters)
		}
	}
}
