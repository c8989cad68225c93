package ebpf

import (
	"context"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/ebpf/marker"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

func TestMarkerReachesTheTrace(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	sink := &memSink{}
	ready := make(chan struct{}, 1)
	sink.onFact = func(*event.Fact) {
		select {
		case ready <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- New(Config{MarkerDir: dir}).Run(ctx, backend.Options{Pids: []uint32{1}, Layers: []event.Layer{event.LayerFile}}, sink)
	}()
	<-ready
	var n int
	for i := 0; i < 100 && n == 0; i++ { // the listener starts after the rundown
		n, _ = marker.Send(dir, "phase two")
		time.Sleep(10 * time.Millisecond)
	}
	if n != 1 {
		t.Fatalf("marker sent to %d traces", n)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []event.Event
	for _, e := range sink.events {
		if e.Op == event.OpMarker {
			got = append(got, e)
		}
	}
	if len(got) != 1 || got[0].Note != "phase two" || got[0].Layer != event.LayerMarker || got[0].Time <= 0 || got[0].Pid == 0 {
		t.Fatalf("markers: %+v", got)
	}
}
