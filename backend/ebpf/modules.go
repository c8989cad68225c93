package ebpf

import (
	"bytes"
	"debug/elf"
	"fmt"
	"strconv"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/symbolize"
)

// A module fact (event.FactModule) records executable code mapped into a
// process, with the file's identity, so that a trace read on another
// machine names the user frames of its stacks from the right file. The
// backend writes them from three sources: the /proc rundown of processes
// already running (their maps), the maps of a process right after it
// execs (the kernel maps the program and its interpreter itself, with no
// mmap call), and the executable mmaps it traces (the dynamic loader
// mapping libraries, dlopen). Unmaps are not traced: a module ends with
// its process's exec or exit.

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end, offset uint64
	exec               bool
	dev                uint32 // kernel dev_t
	inode              uint64
	path               string
}

// fileKey is a mapped file as the kernel's mappings name it: its file
// system's device (kernel dev_t) and inode; zero when not known.
type fileKey struct {
	dev uint32
	ino uint64
}

// parseMaps reads /proc/PID/maps ("start-end perms offset dev inode
// path"), keeping mappings of a file.
func parseMaps(b []byte) ([]mapping, error) {
	var out []mapping
	for n := 1; len(b) > 0; n++ {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) == 0 {
			continue
		}
		f := bytes.Fields(line)
		if len(f) < 5 {
			return out, fmt.Errorf("maps line %d: %d fields, want at least 5", n, len(f))
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			return out, fmt.Errorf("maps line %d: range %q", n, f[0])
		}
		var m mapping
		var err error
		if m.start, err = strconv.ParseUint(string(lo), 16, 64); err != nil {
			return out, fmt.Errorf("maps line %d: start: %w", n, err)
		}
		if m.end, err = strconv.ParseUint(string(hi), 16, 64); err != nil || m.end < m.start {
			return out, fmt.Errorf("maps line %d: end %q", n, hi)
		}
		if m.offset, err = strconv.ParseUint(string(f[2]), 16, 64); err != nil {
			return out, fmt.Errorf("maps line %d: offset: %w", n, err)
		}
		if m.inode, err = strconv.ParseUint(string(f[4]), 10, 64); err != nil {
			return out, fmt.Errorf("maps line %d: inode: %w", n, err)
		}
		major, minor, ok := bytes.Cut(f[3], []byte(":"))
		maj, err1 := strconv.ParseUint(string(major), 16, 32)
		min, err2 := strconv.ParseUint(string(minor), 16, 32)
		if !ok || err1 != nil || err2 != nil || maj >= 1<<12 || min >= 1<<20 {
			return out, fmt.Errorf("maps line %d: device %q", n, f[3])
		}
		m.dev = uint32(maj)<<20 | uint32(min)
		m.exec = len(f[1]) >= 3 && f[1][2] == 'x'
		if len(f) >= 6 && m.inode != 0 {
			// The path is the rest of the line (it may hold spaces).
			i := bytes.Index(line, f[5])
			m.path = string(line[i:])
			out = append(out, m)
		}
	}
	return out, nil
}

// moduleFile is what is known of a module's file: its identity and the
// program headers that map file offsets to ELF virtual addresses.
type moduleFile struct {
	id   string
	segs []elf.ProgHeader
	err  error
}

// liveModule is a module while it is mapped: its fact and its file.
// inherited marks a module a forked child holds from its parent, whose
// fact is written only when a stack of the child needs it (writeInherited).
type liveModule struct {
	fact      event.Fact
	key       fileKey
	inherited bool
}

// moduleTable writes module facts, reading each file once.
type moduleTable struct {
	emit  func(*event.Fact)
	files map[string]*moduleFile
	live  map[uint32][]liveModule // modules of each process, to end them
	fact  event.Fact
	// onMapped, when set, is told of each new module (the unwinder
	// prepares its table).
	onMapped func(pid uint32, m *liveModule)
	// inherited lists the processes with modules not written yet.
	inherited map[uint32]bool

	noID, unreadable uint64
}

func newModuleTable(emit func(*event.Fact)) *moduleTable {
	return &moduleTable{emit: emit, files: map[string]*moduleFile{}, live: map[uint32][]liveModule{}, inherited: map[uint32]bool{}}
}

func (t *moduleTable) file(path string) *moduleFile {
	if mf, ok := t.files[path]; ok {
		return mf
	}
	mf := &moduleFile{}
	mf.id, mf.err = symbolize.ReadID(path)
	if f, err := elf.Open(path); err == nil {
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD {
				mf.segs = append(mf.segs, p.ProgHeader)
			}
		}
		f.Close()
	}
	t.files[path] = mf
	return mf
}

// vaddr returns the ELF virtual address that file offset off (page
// aligned, as mapped) starts at.
func (mf *moduleFile) vaddr(off uint64) (uint64, bool) {
	for _, p := range mf.segs {
		if p.Off&^0xfff == off {
			return p.Vaddr - (p.Off - off), true
		}
	}
	return 0, false
}

// protExec is PROT_EXEC: an mmap of code.
const protExec = 0x4

// mapped records an executable mapping of path into process pid (once
// while it lives: a mapping seen in the maps after an exec and again in
// the mmap event that made it is one module).
func (t *moduleTable) mapped(pid uint32, procStart, ts int64, rundown bool, start, end, offset uint64, path string, key fileKey) {
	for _, m := range t.live[pid] {
		if f := &m.fact; f.Handle == start && f.Size == end-start && f.Offset == offset && f.Name == path {
			return
		}
	}
	mf := t.file(path)
	f := &t.fact
	*f = event.Fact{Kind: event.FactModule, Time: ts, Rundown: rundown, Pid: pid, ProcStart: procStart,
		Handle: start, Size: end - start, Offset: offset, Name: path, Detail: mf.id}
	switch {
	case mf.err != nil:
		t.unreadable++
	case mf.id == "":
		t.noID++
	}
	if v, ok := mf.vaddr(offset); ok {
		f.Vaddr = v
		f.Flags |= event.FactVaddr
	}
	t.emit(f)
	t.live[pid] = append(t.live[pid], liveModule{fact: *f, key: key})
	if t.onMapped != nil {
		t.onMapped(pid, &t.live[pid][len(t.live[pid])-1])
	}
}

// at returns the module of process pid holding addr, nil when none.
func (t *moduleTable) at(pid uint32, addr uint64) *liveModule {
	ms := t.live[pid]
	for i := len(ms) - 1; i >= 0; i-- {
		if f := &ms[i].fact; addr >= f.Handle && addr-f.Handle < f.Size {
			return &ms[i]
		}
	}
	return nil
}

// fromMaps records the executable mappings of a process's maps.
func (t *moduleTable) fromMaps(pid uint32, procStart, ts int64, rundown bool, maps []byte) error {
	ms, err := parseMaps(maps)
	for _, m := range ms {
		if m.exec {
			t.mapped(pid, procStart, ts, rundown, m.start, m.end, m.offset, m.path, fileKey{dev: m.dev, ino: m.inode})
		}
	}
	return err
}

// adopt records the executable mappings of process pid's maps as modules
// whose facts are not written (iotrace itself, which is not traced): a
// child it forks inherits them, and writes them if one of its stacks
// needs them before it execs.
func (t *moduleTable) adopt(pid uint32, maps []byte) {
	ms, _ := parseMaps(maps)
	for _, m := range ms {
		if !m.exec {
			continue
		}
		mf := t.file(m.path)
		f := event.Fact{Kind: event.FactModule, Pid: pid, Handle: m.start, Size: m.end - m.start, Offset: m.offset,
			Name: m.path, Detail: mf.id}
		if v, ok := mf.vaddr(m.offset); ok {
			f.Vaddr, f.Flags = v, event.FactVaddr
		}
		t.live[pid] = append(t.live[pid], liveModule{fact: f, key: fileKey{dev: m.dev, ino: m.inode}, inherited: true})
		t.inherited[pid] = true
	}
}

// forked gives child (started at procStart, forked at ts) its parent's
// modules: a forked process runs its parent's code until it execs.
func (t *moduleTable) forked(parent, child uint32, procStart, ts int64) {
	ms := t.live[parent]
	if len(ms) == 0 {
		return
	}
	out := make([]liveModule, len(ms))
	for i, m := range ms {
		m.fact.Pid, m.fact.ProcStart, m.fact.Time, m.fact.Rundown = child, procStart, ts, false
		m.inherited = true
		out[i] = m
	}
	t.live[child] = out
	t.inherited[child] = true
}

// writeInherited writes the facts of the modules process pid inherited
// and has not written yet (before its first stack).
func (t *moduleTable) writeInherited(pid uint32) {
	if !t.inherited[pid] {
		return
	}
	delete(t.inherited, pid)
	ms := t.live[pid]
	for i := range ms {
		if ms[i].inherited {
			ms[i].inherited = false
			f := ms[i].fact
			t.emit(&f)
		}
	}
}

// gone ends the modules of process pid (exec or exit) at ts.
func (t *moduleTable) gone(pid uint32, ts int64) {
	for _, m := range t.live[pid] {
		if m.inherited {
			continue // never written
		}
		f := m.fact
		f.Time, f.End, f.Rundown = ts, true, false
		t.emit(&f)
	}
	delete(t.live, pid)
	delete(t.inherited, pid)
}

func (t *moduleTable) stats(s *event.Stats) {
	if t.unreadable != 0 {
		s.Add(event.CountUnresolved, "modules whose file could not be read at record time (no identity: their frames stay unnamed)", t.unreadable)
	}
	if t.noID != 0 {
		s.Add(event.CountUnresolved, "modules without a build ID (no identity: their frames stay unnamed)", t.noID)
	}
}

// ntGNUBuildID is the note type of a GNU build ID.
const ntGNUBuildID = 3

// kernelBuildID returns the GNU build ID in the kernel's notes
// (/sys/kernel/notes: ELF note records), "" when there is none.
func kernelBuildID(b []byte) string {
	for len(b) >= 12 {
		namesz, descsz, typ := le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:])
		nameEnd := 12 + (uint64(namesz)+3)&^3
		descEnd := nameEnd + (uint64(descsz)+3)&^3
		if descEnd > uint64(len(b)) {
			return ""
		}
		if typ == ntGNUBuildID && namesz == 4 && string(b[12:15]) == "GNU" {
			return fmt.Sprintf("%x", b[nameEnd:nameEnd+uint64(descsz)])
		}
		b = b[descEnd:]
	}
	return ""
}

// interpOf returns the ELF interpreter a program names (PT_INTERP), ""
// when it names none or cannot be read.
func interpOf(path string) string {
	if path == "" {
		return ""
	}
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, min(p.Filesz, 4096))
			if _, err := p.ReadAt(b, 0); err != nil {
				return ""
			}
			return string(bytes.TrimRight(b, "\x00"))
		}
	}
	return ""
}
