package etw

import (
	"context"
	"fmt"
	"sync"

	"github.com/iotrace/iotrace/backend/etw/internal/modident"
	"github.com/iotrace/iotrace/backend/etw/internal/stackjoin"
	"github.com/iotrace/iotrace/backend/etw/internal/tally"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/ownprovider"
	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// firstPass is a file's first pass (Run): it reads the whole file before
// any event is emitted, so that names, processes and stacks logged late
// (file rundowns come at the end of a trace) serve the whole trace.
//
// What it collects, in the order of each processor's stream (keep: a
// source may apply it before it merges its streams by time, to every
// record once):
//   - stacks wanted only: the time and thread of every record but stack
//     walks, for stack joining to tell the stacks of undecoded records
//     from those whose event was lost (stackjoin.Joiner.NoteRecord), and
//     every stack walk (whole stacks, cache key references and
//     definitions);
//   - every image identity record (ImageID, DbgID_RSDS,
//     iotrace's image records), decoded and taken whole: the second pass
//     does not see them (takenFirst), so their decode errors and the
//     records no decoder knows are kept for it (takenLog);
//   - a count of the OpEnds (file requests then wait for theirs) and of
//     the DiskIo Inits (disk I/O can then be linked to file requests).
//
// What it decodes, merged by time (Pipeline.Push, modeCollect): the
// records that carry facts (firstFacts: the header, file names and
// rundowns, processes, threads, images, disks, volumes, and the Creates
// and Closes that bind FILE_OBJECTs). Their facts fill the resolver
// tables, which are complete when the second pass starts; the first
// pass emits nothing and counts nothing (the tally is muted). In time
// order it also notes each Thread End for stack joining and counts the
// Image events (inOrder). When it ends (end) the stacks are assembled,
// cancellably. What it keeps per record, and its bounds: docs/etw.md,
// "What the first pass keeps".
type firstPass struct {
	stacks   *stackjoin.Joiner // nil: stacks are not wanted (Options.NoStacks)
	mods     *modident.Modules
	dec      *kernel.Decoder // the records it takes
	ev       kernel.Event
	kept     bool // the source applied keep to every record (EachKept)
	opEnds   [numProviders]uint64
	diskInit uint64 // DiskIo Inits
	images   int    // Image events
	taken    takenLog
}

// newFirstPass returns the first pass of a pipeline.
func newFirstPass(stacks *stackjoin.Joiner, mods *modident.Modules) firstPass {
	return firstPass{stacks: stacks, mods: mods, dec: kernel.NewDecoder()}
}

// firstFacts holds the events the first pass decodes: those that carry
// facts (names, processes, threads, images, disks, volumes, the header)
// and the Creates and Closes that bind FILE_OBJECTs. Built on first use,
// as the decoder table it reads is, not in every command's start-up.
var firstFacts = sync.OnceValue(func() *kernel.CodeFilter {
	return kernel.NewCodeFilter(func(k kernel.Kind, op event.Op) bool {
		switch k {
		case kernel.KindTraceHeader, kernel.KindFileName, kernel.KindFileNameDelete, kernel.KindFileRundown,
			kernel.KindProcess, kernel.KindThread, kernel.KindImage, kernel.KindPhysicalDisk,
			kernel.KindLogicalDisk, kernel.KindComputer, kernel.KindVolumeMapping, kernel.KindSystemPaths,
			kernel.KindOwnVolume:
			return true
		case kernel.KindFileRequest:
			return op == event.OpOpen || op == event.OpClose
		}
		return false
	})
})

// firstCounted holds the events the first pass only counts, undecoded:
// OpEnds (requests then wait for them) and DiskIo Inits (disk I/O can
// then be linked to requests).
var firstCounted = sync.OnceValue(func() *kernel.CodeFilter {
	return kernel.NewCodeFilter(func(k kernel.Kind, op event.Op) bool {
		return k == kernel.KindFileOpEnd || k == kernel.KindDiskInit
	})
})

// firstUse is what the first pass does with a record.
type firstUse uint8

const (
	useNone   firstUse = iota // nothing
	useStack                  // a stack walk: taken (take)
	useTaken                  // an image identity record: taken (take)
	useDecode                 // decoded, in time order (it carries facts)
	useCount                  // only counted (firstCounted)
)

// useOf says what the first pass does with r, of class c and code.
func useOf(r *record.Record, c kernel.Class, code uint16) firstUse {
	switch {
	case c == kernel.ClassStackWalk:
		return useStack
	case (c == kernel.ClassImageID || c == kernel.ClassOwn) && takenFirstClass(c, r):
		return useTaken
	case firstFacts().Has(c, code):
		return useDecode
	case firstCounted().Has(c, code):
		return useCount
	}
	return useNone
}

// decodedFirst reports whether the first pass decodes r, as keep does,
// without noting, counting or taking anything.
func decodedFirst(r *record.Record) bool {
	return useOf(r, kernel.ClassOf(r), kernel.CodeOf(r)) == useDecode
}

// takenFirst reports whether the first pass of a file takes r whole, in
// any order, before the merge by time: stack walks and image identities.
// The second pass does not see them.
func takenFirst(r *record.Record) bool {
	return takenFirstClass(kernel.ClassOf(r), r)
}

// takenFirstClass is takenFirst for a record of class c (ClassOf).
func takenFirstClass(c kernel.Class, r *record.Record) bool {
	switch c {
	case kernel.ClassStackWalk, kernel.ClassImageID:
		return true
	case kernel.ClassOwn:
		return r.Opcode == ownprovider.OpcodeImage
	}
	return false
}

// secondWants reports whether the second pass of a file needs r: records a
// decoder may know (kernel.MayDecode), but for those the first pass took.
func secondWants(r *record.Record) bool {
	c := kernel.ClassOf(r)
	return kernel.MayDecodeClass(c, r) && !takenFirstClass(c, r)
}

// keep reports whether the first pass decodes r, noting, taking and
// counting what it collects of the others. It must see every record of
// the first pass once, in the order of its processor's stream, but not
// merged by time.
func (f *firstPass) keep(r *record.Record) bool {
	c, code := kernel.ClassOf(r), kernel.CodeOf(r)
	use := useOf(r, c, code)
	if f.stacks != nil && use != useStack {
		// A record a stack walk may follow.
		f.stacks.NoteRecord(r)
	}
	switch use {
	case useStack:
		if f.stacks != nil {
			f.take(r, c)
		}
	case useTaken:
		f.take(r, c)
	case useDecode:
		return true
	case useCount:
		switch c {
		case kernel.ClassDiskIo:
			f.diskInit++
		case kernel.ClassKernelFile:
			f.opEnds[provKernelFile]++
		default:
			f.opEnds[provFileIo]++
		}
	}
	return false
}

// take decodes and keeps a record the first pass takes (takenFirst);
// what is wrong with it is kept for the second pass (takenLog).
func (f *firstPass) take(r *record.Record, c kernel.Class) {
	if isStackWalk(r) {
		sw, ok, err := kernel.DecodeStackWalk(r)
		switch {
		case !f.taken.decoded(r, ok, err):
		case sw.Kind == kernel.KindStackKeyDef:
			f.stacks.DefineKey(r, sw.StackKey, sw.Frames)
		default:
			f.stacks.Stack(r, &sw)
		}
		return
	}
	if c == kernel.ClassImageID {
		if im, ok, err := kernel.DecodeImageID(r); f.taken.decoded(r, ok, err) {
			id := f.mods.ImageID(&im)
			f.mods.Collect(r.Timestamp, &id)
		}
		return
	}
	ev := &f.ev
	if ok, err := f.dec.Decode(r, ev); !f.taken.decoded(r, ok, err) {
		return
	}
	switch ev.Kind {
	case kernel.KindImageID, kernel.KindImageDbgID, kernel.KindOwnImage:
		if id, err := f.mods.Of(r, ev); err != nil {
			f.taken.keepError(r, StatOwnDecodeErrors, err)
		} else {
			f.mods.Collect(r.Timestamp, &id)
		}
	}
}

// inOrder notes what the first pass keeps of a record it decoded (ev),
// merged by time, besides its facts: a Thread End for stack joining (the
// kernel parts its thread's stacks wait with get no user part), and the
// Image events.
func (f *firstPass) inOrder(r *record.Record, ev *kernel.Event) {
	switch ev.Kind {
	case kernel.KindThread:
		if ev.Phase == kernel.PhaseEnd && f.stacks != nil {
			f.stacks.ThreadEnd(r.Timestamp, ev.Pid, ev.Tid)
		}
	case kernel.KindImage:
		f.images++
	}
}

// end ends the first pass: the second pass starts with what is wrong
// with the records it took (counted and warned through t, undecoded ones
// through dec), the stacks assembled and the identities sorted. It
// returns the number of stacks assembled, or ctx's error when ctx is
// done first.
func (f *firstPass) end(ctx context.Context, dec *kernel.Decoder, t *tally.Tally) (int, error) {
	f.taken.replay(dec, t)
	f.mods.EndCollect(f.images)
	if f.stacks == nil {
		return 0, nil
	}
	return f.stacks.Assemble(ctx)
}

// takenLog keeps what is wrong with the records a file's first pass takes
// (stack walks, image identities) for the second pass, which does not see
// them: a count per counter, the first few messages, and the records no
// decoder knows.
type takenLog struct {
	errs   map[string]uint64
	msgs   []string
	undec  []undecoded        // in the order their kinds came
	kindAt map[recordKind]int // a kind's place in undec
}

// recordKind is what tells records apart in the counts of records not
// decoded: the fields of their header that say what they are.
type recordKind struct {
	kind               record.Kind
	provider           record.GUID
	headerType         uint8
	group, opcode      uint8
	version, id, flags uint16
	pointerSize        int
}

// decoded reports whether a record the first pass takes decoded (ok,
// err: a decoder's answer), keeping what is wrong with it otherwise.
func (k *takenLog) decoded(r *record.Record, ok bool, err error) bool {
	switch {
	case !ok:
		k.keepUndecoded(r)
		return false
	case err != nil:
		k.keepError(r, StatDecodeErrors+": "+kernel.KeyOf(r).String(), err)
		return false
	}
	return true
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
	kind := recordKind{kind: r.Kind, provider: r.Provider, headerType: r.HeaderType, group: r.Group, opcode: r.Opcode,
		version: r.Version, id: r.ID, flags: r.Flags, pointerSize: r.PointerSize}
	if i, ok := k.kindAt[kind]; ok {
		k.undec[i].n++
		return
	}
	if k.kindAt == nil {
		k.kindAt = make(map[recordKind]int)
	}
	k.kindAt[kind] = len(k.undec)
	k.undec = append(k.undec, undecoded{r: record.Record{Kind: r.Kind, Group: r.Group, Provider: r.Provider,
		HeaderType: r.HeaderType, Flags: r.Flags, Opcode: r.Opcode, ID: r.ID, Version: r.Version, PointerSize: r.PointerSize}, n: 1})
}

// replay counts (and reports) what was kept, once the second pass has
// begun: the records no decoder knows by dec, the rest by t.
func (k *takenLog) replay(dec *kernel.Decoder, t *tally.Tally) {
	for i := range k.undec {
		dec.CountUnknown(&k.undec[i].r, k.undec[i].n)
	}
	for name, n := range k.errs {
		t.Add(name, event.CountDropped, n)
	}
	for _, m := range k.msgs {
		t.Warn("%s", m)
	}
	*k = takenLog{}
}
