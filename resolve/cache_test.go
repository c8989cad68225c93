package resolve

import (
	"math/rand/v2"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestResolverCacheMatchesTables checks the resolver's descriptor cache
// against Tables.FilePath: facts (in and out of time order, rundowns,
// names left empty) interleaved with lookups at times around the
// bindings, and the same lookups again once every fact is applied (as
// input's pre-resolved replay does).
func TestResolverCacheMatchesTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"", "/a", "/b", "/c"}
	r := NewResolver(nopSink{})
	// shadow gets the same facts through the History methods, without
	// Tables.Apply's cache of binding lists.
	shadow := NewHistory[FDKey]()
	type probe struct {
		pid  uint32
		fd   int32
		time int64
	}
	var probes []probe
	check := func(p probe) {
		e := event.New()
		e.Layer, e.Pid, e.FD, e.Time = event.LayerFile, p.pid, p.fd, p.time
		want, wok := r.Tables.FilePath(&e)
		k := FDKey{Pid: p.pid, FD: p.fd}
		s, ok := shadow.Lookup(k, p.time)
		if a, aok := r.Tables.FDs.Lookup(k, p.time); s != a || ok != aok {
			t.Fatalf("pid %d fd %d at %d: Apply gave %q %v, History methods %q %v", p.pid, p.fd, p.time, a, aok, s, ok)
		}
		got, res := r.filePath(&e)
		if gok := res == Bound; got != want || gok != wok {
			t.Fatalf("pid %d fd %d at %d: cached %q %v, tables %q %v", p.pid, p.fd, p.time, got, gok, want, wok)
		}
	}
	now := int64(1000)
	for range 50000 {
		pid, fd := uint32(1+rng.IntN(3)), int32(rng.IntN(4))
		switch rng.IntN(10) {
		case 0, 1:
			f := event.Fact{Kind: event.FactName, Space: event.SpaceFD, Pid: pid, Handle: uint64(fd),
				Time: now, Name: names[rng.IntN(len(names))], Rundown: rng.IntN(8) == 0}
			if rng.IntN(10) == 0 {
				f.Time -= rng.Int64N(50) // out of order
			}
			r.Tables.Apply(&f)
			if f.Rundown {
				shadow.BindRundown(FDKey{pid, fd}, f.Time, f.Name)
			} else {
				shadow.Bind(FDKey{pid, fd}, f.Time, f.Name)
			}
		case 2:
			r.Tables.Apply(&event.Fact{Kind: event.FactName, Space: event.SpaceFD, Pid: pid, Handle: uint64(fd), Time: now, End: true})
			shadow.Unbind(FDKey{pid, fd}, now)
		default:
			p := probe{pid, fd, now - rng.Int64N(30)}
			if rng.IntN(4) == 0 {
				p.time = now + rng.Int64N(5)
			}
			probes = append(probes, p)
			check(p)
		}
		now += rng.Int64N(3)
	}
	for _, p := range probes {
		check(p)
	}
	for i := len(probes) - 1; i >= 0; i-- {
		check(probes[i])
	}
}
