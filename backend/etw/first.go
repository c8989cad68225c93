package etw

import (
	"fmt"

	"github.com/iotrace/iotrace/backend/etw/internal/tally"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// takenLog keeps what is wrong with the records a file's first pass takes
// (stack walks, image identities) for the second pass, which does not see
// them: a count per counter, the first few messages, and the records no
// decoder knows.
type takenLog struct {
	errs  map[string]uint64
	msgs  []string
	undec []undecoded
}

// keepError keeps the decoding error of a record the first pass takes.
func (k *takenLog) keepError(r *record.Record, counter string, err error) {
	if k.errs == nil {
		k.errs = make(map[string]uint64)
	}
	k.errs[counter]++
	if len(k.msgs) < tally.MaxWarnings {
		k.msgs = append(k.msgs, fmt.Sprintf("etl record at file offset %#x (buffer %d): %v", r.FileOffset, r.Buffer, err))
	}
}

// undecoded is a count of records like r (header only) that the first
// pass takes and no decoder knows.
type undecoded struct {
	r record.Record
	n uint64
}

// keepUndecoded counts a record the first pass takes and no decoder knows
// (an ImageID FileVersion, a StackWalk of a later version…), for the
// second pass's not-decoded counts.
func (k *takenLog) keepUndecoded(r *record.Record) {
	for i := range k.undec {
		u := &k.undec[i].r
		if u.Kind == r.Kind && u.Group == r.Group && u.Provider == r.Provider && u.Opcode == r.Opcode &&
			u.ID == r.ID && u.HeaderType == r.HeaderType && u.Flags == r.Flags && u.Version == r.Version && u.PointerSize == r.PointerSize {
			k.undec[i].n++
			return
		}
	}
	k.undec = append(k.undec, undecoded{r: record.Record{Kind: r.Kind, Group: r.Group, Provider: r.Provider,
		HeaderType: r.HeaderType, Flags: r.Flags, Opcode: r.Opcode, ID: r.ID, Version: r.Version, PointerSize: r.PointerSize}, n: 1})
}

// replay counts (and reports) what was kept, once the second pass has
// begun.
func (k *takenLog) replay(p *Pipeline) {
	for i := range k.undec {
		p.dec.CountUnknown(&k.undec[i].r, k.undec[i].n)
	}
	for name, n := range k.errs {
		p.tally.Add(name, event.CountDropped, n)
	}
	for _, m := range k.msgs {
		p.tally.Warn("%s", m)
	}
	*k = takenLog{}
}
