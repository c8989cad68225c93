package ebpf

import (
	"github.com/iotrace/iotrace/backend"
	"testing"
	"time"
)

func TestZZStartup(t *testing.T) {
	t0 := time.Now()
	sink, ready, stop := runTrace(t, backend.Options{}, 0)
	<-ready
	t.Logf("ready after %v", time.Since(t0))
	stop()
	t.Logf("stopped after %v", time.Since(t0))
	for _, c := range sink.trailer.Stats.Sorted() {
		t.Logf("%v %s %d", c.Kind, c.Name, c.Value)
	}
	t.Logf("%d events %d facts", len(sink.events), len(sink.facts))
}
