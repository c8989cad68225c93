package stackjoin

import (
	"github.com/iotrace/iotrace/backend/etw/internal/tally"
)

// Joiner joins stack records to their events: in a file, it collects them
// in the first pass (NoteRecord, Stack, DefineKey, ThreadEnd), assembles
// each event's stack (Assemble) and gives it to the event in the second
// (Take); in a live session, it keeps the stack cache keys (DefineLiveKey)
// and resolves the parts of stack records (LivePart). It is not safe for
// concurrent use.
type Joiner struct {
	t *tally.Tally

	// The first pass: the stack records, in chunks of rawChunk (never
	// copied), and the time and thread of every other record, by
	// processor, in the order of its stream (NoteRecord).
	raw    [][]rawStack
	nraw   int
	recent []recentRecs
	noTid  []noTidLog

	// Assembled: the stacks by event, in time order (order: by time,
	// thread, then index in pres), taken by the second pass as it goes
	// (cur).
	pres     []preStack
	order    []tsIndex
	cur      int
	waitUser map[uint32][]int32 // per thread, the events waiting for a user part (Assemble)
	take     Parts              // Take's result, reused
	groups   []takeGroup        // the take groups of the threads at groupsTS (Take)
	groupAt  map[groupKey]int   // their places in groups
	groupsTS int64

	// Frames kept (a stack's, a key definition's), by chunk, and the
	// definitions of stack cache keys.
	arena      [][]uint64
	defs       []keyDef
	defsSorted bool
	lastDef    map[defKey]uint32 // a file's first pass: the last definition of each key (DefineKey)

	scratch []uint64 // LivePart's frames
}

// New returns a Joiner that counts into t.
func New(t *tally.Tally) *Joiner { return &Joiner{t: t} }
