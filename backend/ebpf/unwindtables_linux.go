package ebpf

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
	"github.com/iotrace/iotrace/unwind"
)

// The unwind tables of the files mapped by traced processes (package
// unwind), loaded into the BPF maps the walker reads (bpf/unwind.h) and
// kept for walking, in user space, the stacks the walker sent as copies.
// A table is built once per file identity (build ID), read from the disk
// cache when a run before built it, and shared by every file (device and
// inode) with that identity and every process mapping one.

// kernelRow, kernelFile and the rules are the values of unwind_rows,
// unwind_files and unwind_rules (bpf/unwind.h).
type kernelRow struct {
	Off, Rule uint32
}

type kernelFile struct {
	Size         uint64
	Start, Count uint32
	Kind         uint8
	Pad          [7]uint8
}

type kernelRule struct {
	CFA, Threshold, Signal, FP, RA uint8
	Pad                            [3]uint8
	CFAOff, FPOff, RAOff           int32
}

// kindFull is unwind_files' kind of a file whose table did not fit in
// the maps (KIND_FULL).
const kindFull = 4

// kernelTables is where tables are loaded: the BPF maps, or a test's.
type kernelTables interface {
	putRules(first uint32, rules []kernelRule) error
	putRows(first uint32, rows []kernelRow) error
	putFile(k fileKey, f kernelFile) error
}

// tableEntry is one identity's table.
type tableEntry struct {
	tab          *unwind.Table // nil: none (err says why)
	err          error
	first, count uint32 // its rows in unwind_rows
	placed, full bool
	ready        chan struct{} // closed once tab, err and the placement are set
}

// fileEntry is one mapped file's table.
type fileEntry struct {
	t     *tableEntry
	ready chan struct{}
}

// opener opens a mapped file for reading its table; exact says it is
// the very file mapped (through /proc/PID/map_files), not the file at
// the mapping's path now.
type opener func() (f *os.File, exact bool, err error)

// unwindTables holds the tables.
type unwindTables struct {
	mu       sync.Mutex
	kt       kernelTables // nil: user space only
	cache    *unwind.Cache
	byID     map[string]*tableEntry
	files    map[fileKey]*fileEntry
	rules    map[unwind.Rule]uint32
	rows     uint32
	maxRows  uint32
	maxRules uint32

	built, cached, full uint64
	buildTime           time.Duration
	failed              map[string]uint64
	cacheErr            error
	work                chan func()
	workers             sync.WaitGroup
	stopped             atomic.Bool
	preload             time.Duration // loading before tracing began
}

// newUnwindTables returns a store loading into kt (nil: none), which
// holds maxRows rows and maxRules rules; cache may be nil.
func newUnwindTables(kt kernelTables, cache *unwind.Cache, maxRows, maxRules uint32) *unwindTables {
	return &unwindTables{kt: kt, cache: cache, byID: map[string]*tableEntry{}, files: map[fileKey]*fileEntry{},
		rules: map[unwind.Rule]uint32{}, maxRows: maxRows, maxRules: maxRules, failed: map[string]uint64{}}
}

// forFile returns the table of mapped file key (zero: not known, the
// file opened says), opening it with open the first time; it waits while
// another goroutine builds it. The result's tab is nil when the file has
// no usable table.
func (u *unwindTables) forFile(key fileKey, open opener) *tableEntry {
	if key != (fileKey{}) {
		u.mu.Lock()
		fe, ok := u.files[key]
		u.mu.Unlock()
		if ok {
			<-fe.ready
			return fe.t
		}
	}
	f, exact, err := open()
	if err != nil {
		return u.failure(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return u.failure(err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return u.failure(errors.New("no inode"))
	}
	actual := fileKey{dev: kernelDevOf(uint64(sys.Dev)), ino: sys.Ino}
	if key != (fileKey{}) && key != actual && !exact {
		return u.failure(errors.New("the file at the module's path is not the one mapped"))
	}
	size := uint64(st.Size())
	u.mu.Lock()
	fe, ok := u.files[actual]
	if !ok {
		fe = &fileEntry{ready: make(chan struct{})}
		u.files[actual] = fe
	}
	u.mu.Unlock()
	if ok {
		<-fe.ready
	} else {
		fe.t = u.load(actual, f, st)
		u.mu.Lock()
		u.putFile(actual, fe.t, size)
		u.mu.Unlock()
		close(fe.ready)
	}
	if key != (fileKey{}) && key != actual {
		// The mapping's file seen through another device and inode
		// (overlayfs): the same file, known under both.
		u.alias(key, size, fe.t)
	}
	return fe.t
}

// alias makes the kernel find t under key too (a file the walker saw
// under another device and inode than user space did: overlayfs).
func (u *unwindTables) alias(key fileKey, size uint64, t *tableEntry) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.files[key]; ok {
		return
	}
	fe := &fileEntry{t: t, ready: make(chan struct{})}
	close(fe.ready)
	u.files[key] = fe
	u.putFile(key, t, size)
}

// load returns the table of the identity of f (file key), building it
// (or reading it from the cache) when f is the first file of that
// identity.
func (u *unwindTables) load(key fileKey, f *os.File, st os.FileInfo) *tableEntry {
	id, err := symbolize.ReadIDAt(f)
	if err != nil {
		return u.failure(err)
	}
	if id == "" {
		// No build ID: this file's own table, never cached.
		id = fmt.Sprintf("file:%d:%d:%d:%d", key.dev, key.ino, st.Size(), st.ModTime().UnixNano())
	}
	u.mu.Lock()
	t, ok := u.byID[id]
	if !ok {
		t = &tableEntry{ready: make(chan struct{})}
		u.byID[id] = t
	}
	u.mu.Unlock()
	if ok {
		<-t.ready
		return t
	}
	t.tab, t.err = u.build(id, f)
	u.mu.Lock()
	u.place(t)
	u.mu.Unlock()
	close(t.ready)
	return t
}

func (u *unwindTables) failure(err error) *tableEntry {
	u.mu.Lock()
	u.failed[err.Error()]++
	u.mu.Unlock()
	t := &tableEntry{err: err, ready: make(chan struct{})}
	close(t.ready)
	return t
}

// build returns identity id's table: from the cache, else built from f
// (and cached).
func (u *unwindTables) build(id string, f *os.File) (*unwind.Table, error) {
	cacheable := u.cache != nil && len(id) > 4 && id[:4] != "file"
	if cacheable {
		t, err := u.cache.Get(id)
		if err != nil {
			u.noteCacheErr(err)
		} else if t != nil {
			u.mu.Lock()
			u.cached++
			u.mu.Unlock()
			return t, nil
		}
	}
	start := time.Now()
	t, err := unwind.BuildFrom(f)
	u.mu.Lock()
	u.built++
	u.buildTime += time.Since(start)
	if err != nil {
		u.failed[err.Error()]++
	}
	u.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if cacheable {
		if err := u.cache.Put(id, t); err != nil {
			u.noteCacheErr(err)
		}
	}
	return t, nil
}

func (u *unwindTables) noteCacheErr(err error) {
	u.mu.Lock()
	if u.cacheErr == nil {
		u.cacheErr = err
	}
	u.mu.Unlock()
}

// place loads t's rows and rules into the kernel's maps (u.mu held).
func (u *unwindTables) place(t *tableEntry) {
	if u.kt == nil || t.tab == nil || t.tab.Kind != unwind.KindCFI {
		return
	}
	n := uint64(len(t.tab.Rows))
	var newRules []unwind.Rule
	for _, r := range t.tab.Rules() {
		if _, ok := u.rules[r]; !ok {
			newRules = append(newRules, r)
		}
	}
	if n > 1<<24 || uint64(u.rows)+n > uint64(u.maxRows) || uint64(len(u.rules)+len(newRules)) > uint64(u.maxRules) {
		t.full = true
		u.full++
		return
	}
	first := uint32(len(u.rules))
	kr := make([]kernelRule, len(newRules))
	for i, r := range newRules {
		u.rules[r] = first + uint32(i)
		kr[i] = kernelRuleOf(r)
	}
	if len(kr) > 0 {
		if err := u.kt.putRules(first, kr); err != nil {
			u.failed["loading unwind rules: "+err.Error()]++
			t.full = true
			return
		}
	}
	rows := make([]kernelRow, n)
	for i, r := range t.tab.Rows {
		if r.Off > 0xffffffff {
			rows = rows[:i] // past 4 GiB of a file: no CFI there
			break
		}
		rows[i] = kernelRow{Off: uint32(r.Off), Rule: u.rules[r.Rule]}
	}
	if err := u.kt.putRows(u.rows, rows); err != nil {
		u.failed["loading unwind rows: "+err.Error()]++
		t.full = true
		return
	}
	t.first, t.count, t.placed = u.rows, uint32(len(rows)), true
	u.rows += uint32(len(rows))
}

// putFile tells the kernel key's table (u.mu held).
func (u *unwindTables) putFile(key fileKey, t *tableEntry, size uint64) {
	if u.kt == nil {
		return
	}
	kf := kernelFile{Size: size, Kind: uint8(unwind.KindNone)}
	switch {
	case t.tab == nil:
	case t.tab.Kind == unwind.KindFramePointers:
		kf.Kind = uint8(unwind.KindFramePointers)
	case t.tab.Kind == unwind.KindCFI && t.placed:
		kf.Kind, kf.Start, kf.Count = uint8(unwind.KindCFI), t.first, t.count
	case t.full:
		kf.Kind = kindFull
	}
	if err := u.kt.putFile(key, kf); err != nil {
		u.failed["loading an unwind file entry: "+err.Error()]++
	}
}

func kernelRuleOf(r unwind.Rule) kernelRule {
	k := kernelRule{CFA: uint8(r.CFA), Threshold: r.Threshold, FP: uint8(r.FP), RA: uint8(r.RA),
		CFAOff: r.CFAOff, FPOff: r.FPOff, RAOff: r.RAOff}
	if r.Signal {
		k.Signal = 1
	}
	return k
}

// kernelDevOf converts a user-space dev_t (stat(2)) to the kernel's.
func kernelDevOf(dev uint64) uint32 {
	major := uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff)
	minor := uint32(dev&0xff) | uint32((dev>>12)&^0xff)
	return major<<20 | minor
}

// prefetch builds key's table in the background (start must have been
// called; after stop it does nothing).
func (u *unwindTables) prefetch(key fileKey, open opener) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, known := u.files[key]; known || u.work == nil || u.stopped.Load() {
		return
	}
	select {
	case u.work <- func() { u.forFile(key, open) }:
	default:
		// The queue is full: the walker will ask for it (a copy).
	}
}

// start runs n background builders until stop.
func (u *unwindTables) start(n int) {
	u.work = make(chan func(), 4096)
	for range n {
		u.workers.Add(1)
		go func() {
			defer u.workers.Done()
			for f := range u.work {
				if !u.stopped.Load() {
					f()
				}
			}
		}()
	}
}

// stop ends the background builders, dropping the work not started (the
// trace is over: no stack needs it).
func (u *unwindTables) stop() {
	u.mu.Lock()
	work := u.work
	if work != nil && !u.stopped.Load() {
		u.stopped.Store(true)
		close(work)
	}
	u.mu.Unlock()
	u.workers.Wait()
}

// stats adds the store's counters to s.
func (u *unwindTables) stats(s *event.Stats) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s.Add(event.CountInfo, "unwind tables: mapped files", uint64(len(u.files)))
	s.Add(event.CountInfo, "unwind tables: distinct files (build IDs)", uint64(len(u.byID)))
	s.Add(event.CountInfo, "unwind tables: built", u.built)
	s.Add(event.CountInfo, "unwind tables: read from the cache", u.cached)
	s.Add(event.CountInfo, "unwind tables: rows in the kernel", uint64(u.rows))
	s.Add(event.CountInfo, "unwind tables: build time (ms)", uint64(u.buildTime.Milliseconds()))
	if u.full != 0 {
		s.Add(event.CountUnresolved, fmt.Sprintf("unwind tables not loaded: the maps (%d rows, %d rules) were full (their frames end stacks)", u.maxRows, u.maxRules), u.full)
	}
	reasons := make([]string, 0, len(u.failed))
	for r := range u.failed {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		s.Add(event.CountUnresolved, "unwind tables not built: "+r, u.failed[r])
	}
	if u.cacheErr != nil {
		s.Add(event.CountInfo, "unwind table cache not used: "+u.cacheErr.Error(), 1)
	}
}
