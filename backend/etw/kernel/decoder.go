package kernel

import (
	"fmt"
	"sort"
	"sync"

	"github.com/iotrace/iotrace/backend/etw/record"
	"github.com/iotrace/iotrace/event"
)

// codeKey is a class and opcode (or event id), any version.
type codeKey struct {
	class Class
	code  uint16
}

// table holds the decoders. It is built once and never changed.
type table struct {
	exact map[uint64]*spec // by Key.pack
	// ignored are known events iotrace has no use for, any version.
	ignored map[codeKey]*spec
	// latest is, for classes whose newer versions only append fields,
	// the highest version known per (class, code) and pointer size.
	latest map[codeKey]uint16
	// names are the native names of codes, for messages.
	names map[codeKey]string
}

// appendOnly lists the classes whose newer versions only append fields,
// so that an unknown newer version decodes with the latest known layout.
var appendOnly = [numClasses]bool{
	ClassEventTrace: true, ClassProcess: true, ClassThread: true, ClassImage: true,
	ClassSystemConfig: true, ClassSysConfig: true,
}

func (t *table) add(class Class, codes []uint16, versions []uint16, s spec) {
	for _, c := range codes {
		sc := s
		if s.native == "" {
			sc.native = t.names[codeKey{class, c}]
		}
		for _, v := range versions {
			for _, p := range []uint8{4, 8} {
				k := Key{Class: class, Code: c, Version: v, PtrSize: p}
				if _, dup := t.exact[k.pack()]; dup {
					panic(fmt.Sprintf("kernel: duplicate decoder for %+v", k))
				}
				cp := sc
				t.exact[k.pack()] = &cp
			}
			ck := codeKey{class, c}
			if v > t.latest[ck] || t.latest[ck] == 0 {
				t.latest[ck] = v
			}
		}
	}
}

func (t *table) ignore(class Class, codes ...uint16) {
	for _, c := range codes {
		ck := codeKey{class, c}
		t.ignored[ck] = &spec{native: t.names[ck], kind: KindIgnored}
	}
}

func (t *table) name(class Class, code uint16, name string) {
	t.names[codeKey{class, code}] = class.String() + "/" + name
}

// defaultTable is built on first use: a Linux command that reads no .etl
// does not pay for it at start-up (about 1 ms of package init).
var defaultTable = sync.OnceValue(buildTable)

func buildTable() *table {
	t := &table{
		exact:   make(map[uint64]*spec),
		ignored: make(map[codeKey]*spec),
		latest:  make(map[codeKey]uint16),
		names:   make(map[codeKey]string),
	}
	addEventTrace(t)
	addFileIoNames(t)
	addFileIoRequests(t)
	addDiskIo(t)
	addProcess(t)
	addThread(t)
	addImage(t)
	addSystemConfig(t)
	addKernelFile(t)
	addKernelProcess(t)
	addStackWalk(t)
	addImageID(t)
	addOwn(t)
	return t
}

func codeName(c Class, code uint16) string {
	if n, ok := defaultTable().names[codeKey{c, code}]; ok {
		return n[len(c.String())+1:]
	}
	return fmt.Sprintf("opcode(%d)", code)
}

// NativeName returns the name of an event class and code ("FileIo/Read"),
// or "" when the table does not know it.
func NativeName(c Class, code uint16) string { return defaultTable().names[codeKey{c, code}] }

func (t *table) lookup(k Key) *spec {
	if k.Class == ClassUnknown {
		return nil
	}
	if s := t.exact[k.pack()]; s != nil {
		return s
	}
	ck := codeKey{k.Class, k.Code}
	if s := t.ignored[ck]; s != nil {
		return s
	}
	if appendOnly[k.Class] {
		if v, ok := t.latest[ck]; ok && k.Version > v {
			return t.exact[Key{Class: k.Class, Code: k.Code, Version: v, PtrSize: k.PtrSize}.pack()]
		}
	}
	return nil
}

// Has reports whether a decoder exists for k (including known events that
// are ignored).
func Has(k Key) bool { return defaultTable().lookup(k) != nil }

// unknownKey counts records no decoder knows: a kernel group (or class)
// or a provider, and an opcode or event id with its version.
type unknownKey struct {
	provider record.GUID // zero for kernel headers
	code     uint64      // kernel<<63 | class<<48 | group<<40 | ptr<<32 | code<<16 | version
}

func makeUnknownKey(r *record.Record, k Key) unknownKey {
	c := uint64(k.Class)<<48 | uint64(k.PtrSize)<<32 | uint64(k.Code)<<16 | uint64(k.Version)
	switch r.Kind {
	case record.KindSystem, record.KindCompact, record.KindPerfInfo:
		return unknownKey{code: 1<<63 | c | uint64(r.Group)<<40}
	}
	if r.Kind == record.KindEvent {
		c |= 1 << 62
	}
	return unknownKey{provider: r.Provider, code: c}
}

func (u unknownKey) manifest() bool { return u.code>>62&1 != 0 }

func (u unknownKey) kernel() bool    { return u.code>>63 != 0 }
func (u unknownKey) class() Class    { return Class(u.code >> 48 & 0x3f) }
func (u unknownKey) group() uint8    { return uint8(u.code >> 40) }
func (u unknownKey) ptr() uint8      { return uint8(u.code >> 32) }
func (u unknownKey) opcode() uint16  { return uint16(u.code >> 16) }
func (u unknownKey) version() uint16 { return uint16(u.code) }

// recentUnknown is a count of undecodable records not yet in the map.
type recentUnknown struct {
	k unknownKey
	n uint64
}

// Decoder decodes records and counts those it cannot decode. It is not
// safe for concurrent use.
type Decoder struct {
	t       *table
	unknown map[unknownKey]uint64
	last    Key
	lastS   *spec
	recent  [8]recentUnknown // counts not yet added to unknown
	// Decoded counts records decoded (including ignored known ones);
	// Errors counts records whose payload did not fit their layout.
	Decoded, Errors uint64
}

// NewDecoder returns a decoder with the built-in table.
func NewDecoder() *Decoder {
	return &Decoder{t: defaultTable(), unknown: make(map[unknownKey]uint64)}
}

// Decode decodes r into ev (which it resets first). ok is false when no
// decoder knows r (it is counted, see Stats; ev is left as it was); err is
// a *FieldError when the payload is shorter than its layout (ev then holds
// the fields decoded before the error).
func (d *Decoder) Decode(r *record.Record, ev *Event) (ok bool, err error) {
	k := KeyOf(r)
	var s *spec
	if k == d.last && d.lastS != nil {
		s = d.lastS
	} else {
		s = d.t.lookup(k)
		d.last, d.lastS = k, s
	}
	if s == nil {
		d.countUnknown(makeUnknownKey(r, k), 1)
		return false, nil
	}
	ev.Reset()
	ev.Key = k
	ev.Kind, ev.Native, ev.Op, ev.Phase = s.kind, s.native, s.op, s.phase
	d.Decoded++
	if s.fn != nil {
		err = s.fn(k, r.UserData, ev)
	} else if len(s.fields) > 0 {
		err = walk(k, s.fields, r.UserData, ev)
	}
	if err != nil {
		d.Errors++
	}
	return true, err
}

// CountUnknown counts n records like r as Decode counts a record no
// decoder knows, without decoding them: for records a source left out
// because MayDecode is false for them. Only r's header fields that
// identify its kind are used (Kind, Group, Provider, Opcode, ID, Version,
// PointerSize).
func (d *Decoder) CountUnknown(r *record.Record, n uint64) {
	if n > 0 {
		d.countUnknown(makeUnknownKey(r, KeyOf(r)), n)
	}
}

// countUnknown counts n records no decoder knows. Traces interleave a
// few kinds of them (samples, stack walks, CLR events): a handful of
// recent keys are counted in place and go to the map when they make way.
func (d *Decoder) countUnknown(uk unknownKey, n uint64) {
	for i := range d.recent {
		if d.recent[i].n > 0 && d.recent[i].k == uk {
			d.recent[i].n += n
			if i > 0 {
				d.recent[i], d.recent[i-1] = d.recent[i-1], d.recent[i]
			}
			return
		}
	}
	last := &d.recent[len(d.recent)-1]
	if last.n > 0 {
		d.unknown[last.k] += last.n
	}
	copy(d.recent[1:], d.recent[:len(d.recent)-1])
	d.recent[0] = recentUnknown{k: uk, n: n}
}

// flushUnknown adds the recent unknown counts to the map.
func (d *Decoder) flushUnknown() {
	for i := range d.recent {
		if d.recent[i].n > 0 {
			d.unknown[d.recent[i].k] += d.recent[i].n
			d.recent[i] = recentUnknown{}
		}
	}
}

// Unknown returns how many records no decoder knew.
func (d *Decoder) Unknown() uint64 {
	d.flushUnknown()
	var n uint64
	for _, v := range d.unknown {
		n += v
	}
	return n
}

// Undecoded is one kind of record no decoder knew, with its count.
type Undecoded struct {
	// Source is the provider or kernel group: "kernel StackWalk",
	// "provider Microsoft-Windows-DotNETRuntime {e13c0d23-…}", or the
	// class iotrace knows by another header ("Image", "SysConfig").
	Source string
	// Name is the event's name when iotrace knows it ("FileIo/Read"), for
	// a version or pointer size it has no decoder for.
	Name string
	// Code is the opcode, or the event id when IsID is set (manifest
	// and TraceLogging events).
	Code    uint16
	IsID    bool
	Version uint16
	PtrSize uint8
	// IO is set for the I/O classes (FileIo, DiskIo, Kernel-File): an
	// opcode or version iotrace does not know may hold I/O missing from
	// the trace, so these are counted as dropped.
	IO    bool
	Count uint64
}

// String renders u as "kernel StackWalk opcode 32 v2 x64" or
// "FileIo/Read v9 x64".
func (u Undecoded) String() string {
	arch := "x64"
	if u.PtrSize == 4 {
		arch = "x86"
	}
	if u.Name != "" {
		return fmt.Sprintf("%s v%d %s", u.Name, u.Version, arch)
	}
	label := "opcode"
	if u.IsID {
		label = "id"
	}
	return fmt.Sprintf("%s %s %d v%d %s", u.Source, label, u.Code, u.Version, arch)
}

// Undecoded lists the records no decoder knew, by source, code, version
// and pointer size, sorted.
func (d *Decoder) Undecoded() []Undecoded {
	d.flushUnknown()
	out := make([]Undecoded, 0, len(d.unknown))
	for k, n := range d.unknown {
		u := Undecoded{Code: k.opcode(), IsID: k.manifest(), Version: k.version(), PtrSize: k.ptr(), Count: n}
		switch c := k.class(); {
		case c == ClassFileIo || c == ClassDiskIo || c == ClassKernelFile:
			u.IO = true
			u.Source, u.Name = c.String(), NativeName(c, u.Code)
		case c != ClassUnknown:
			u.Source, u.Name = c.String(), NativeName(c, u.Code)
		case k.kernel():
			u.Source = "kernel " + groupName(k.group())
		default:
			u.Source = "provider " + providerName(k.provider)
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.PtrSize < b.PtrSize
	})
	return out
}

// Counter name prefixes of the records that were not decoded.
const (
	StatUndecodedIO     = "etw: I/O records with no decoder for their opcode and version (skipped): "
	StatUndecoded       = "etw: records not decoded (not I/O): "
	StatUndecodedDetail = "etw: records not decoded (not I/O), by event: "
)

// Stats adds the counts of records that were not decoded to s. FileIo,
// DiskIo and Kernel-File records with an opcode or version iotrace does
// not know are CountDropped, one counter per opcode and version (they may
// hold I/O missing from the trace). The rest (CLR, stack walks, TCP/IP…)
// are CountInfo, one counter per provider or kernel group with the total,
// so that a trace full of other providers keeps a readable summary;
// StatsDetail adds one counter per event.
func (d *Decoder) Stats(s *event.Stats) {
	var last string
	var total uint64
	flush := func() {
		if total > 0 {
			s.Add(event.CountInfo, StatUndecoded+last, total)
		}
	}
	for _, u := range d.Undecoded() {
		if u.IO {
			s.Add(event.CountDropped, StatUndecodedIO+u.String(), u.Count)
			continue
		}
		if u.Source != last {
			flush()
			last, total = u.Source, 0
		}
		total += u.Count
	}
	flush()
}

// StatsDetail adds one CountInfo counter per undecoded event that is not
// I/O (source, code, version, pointer size), under StatUndecodedDetail.
func (d *Decoder) StatsDetail(s *event.Stats) {
	for _, u := range d.Undecoded() {
		if !u.IO {
			s.Add(event.CountInfo, StatUndecodedDetail+u.String(), u.Count)
		}
	}
}

var groupNames = map[uint8]string{
	0x00: "EventTrace", 0x01: "DiskIo", 0x02: "Memory", 0x03: "Process", 0x04: "FileIo",
	0x05: "Thread", 0x06: "TcpIp", 0x07: "Job", 0x08: "UdpIp", 0x09: "Registry",
	0x0A: "DbgPrint", 0x0B: "SystemConfig", 0x0D: "Wnf", 0x0E: "Pool", 0x0F: "PerfInfo",
	0x10: "Heap", 0x11: "Object", 0x12: "Power", 0x13: "Modbound", 0x14: "Image",
	0x15: "Dpc", 0x16: "CacheManager", 0x17: "CritSec", 0x18: "StackWalk", 0x19: "Ums",
	0x1A: "Alpc", 0x1B: "SplitIo", 0x1C: "ThreadPool", 0x1D: "Hypervisor", 0x1E: "HypervisorX",
}

func groupName(g uint8) string {
	if n, ok := groupNames[g]; ok {
		return n
	}
	return fmt.Sprintf("group 0x%02x", g)
}

var providerNames = map[record.GUID]string{
	mustGUID("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4"): "Microsoft-Windows-DotNETRuntime",
	mustGUID("a669021c-c450-4609-a035-5af59af4df18"): "Microsoft-Windows-DotNETRuntimeRundown",
	mustGUID("763fd754-7086-4dfe-95eb-c01a46faf4ca"): "Microsoft-Windows-DotNETRuntimePrivate",
	mustGUID("22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716"): "Microsoft-Windows-Kernel-Process",
	mustGUID("b675ec37-bdb6-4648-bc92-f3fdc74d3ca2"): "Microsoft-Windows-Kernel-EventTracing",
	mustGUID("b3e675d7-2554-4f18-830b-2762732560de"): "KernelTraceControl",
	mustGUID("dd5ef90a-6398-47a4-ad34-4dcecdef795f"): "Microsoft-Windows-HttpService",
	mustGUID("a0c1853b-5c40-4b15-8766-3cf1c58f985a"): "Microsoft-Windows-PowerShell",
	mustGUID("45d8cccd-539f-4b72-a8b7-5c683142609a"): "Microsoft-Windows-Kernel-EventTracing (lost events)",
	mustGUID("6a399ae0-4bc6-4de9-870b-3657f8947e7e"): "RT_LostEvent",
	mustGUID("ce1dbfb4-137e-4da6-87b0-3f59aa102cbc"): "PerfInfo",
	mustGUID("def2fe46-7bd6-4b80-bd94-f57fe20d0ce3"): "StackWalk",
}

func providerName(g record.GUID) string {
	if n, ok := providerNames[g]; ok {
		return n + " {" + g.String() + "}"
	}
	return "{" + g.String() + "}"
}
