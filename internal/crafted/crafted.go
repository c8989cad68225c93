// Package crafted makes the hostile inputs of issue 25 for tests: traces
// whose facts are built to cost a reader what they do not hold, and
// symbol files whose size fields claim what the file does not hold. Each
// is a small generator, not a stored file, so a regression test keeps
// its case at any size.
package crafted

import (
	"debug/elf"
	"encoding/binary"
	"os"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/tracefile"
)

// Pid is the process of the traces made here.
const Pid = 4242

// Trace is a trace to write: facts first, then events.
type Trace struct {
	Facts  []event.Fact
	Events []event.Event
	// Interleave, when set, gives the facts to write before each event
	// (by index), after Facts.
	Interleave func(i int) []event.Fact
}

// Write writes t as a .iot file at path.
func (t *Trace) Write(path string) error {
	w, err := tracefile.Create(path, tracefile.WriterOptions{})
	if err != nil {
		return err
	}
	h := event.Header{Source: event.SourceSynthetic, OS: "linux", CPUs: 1, Hostname: "crafted"}
	if err := w.Begin(&h); err != nil {
		return err
	}
	for i := range t.Facts {
		if err := w.Fact(&t.Facts[i]); err != nil {
			return err
		}
	}
	var end int64
	for i := range t.Events {
		if t.Interleave != nil {
			for _, f := range t.Interleave(i) {
				if err := w.Fact(&f); err != nil {
					return err
				}
			}
		}
		if err := w.Event(&t.Events[i]); err != nil {
			return err
		}
		end = max(end, t.Events[i].End())
	}
	if err := w.End(&event.Trailer{End: end + 1}); err != nil {
		return err
	}
	return w.Close()
}

// Write returns an event: a write of process Pid from stack.
func Write(id uint64, at int64, stack uint64) event.Event {
	e := event.New()
	e.ID, e.Source, e.Layer, e.Op, e.Native = id, event.SourceSynthetic, event.LayerFile, event.OpWrite, "write"
	e.Time, e.Duration, e.Pid, e.Tid, e.Comm, e.Path, e.FD = at, 1000, Pid, Pid, "crafted", "/tmp/out", 3
	e.Size, e.Bytes, e.Stack = 4096, 4096, stack
	return e
}

// Module is a module fact of process Pid: path mapped at base for size
// bytes, with identity id ("gnu:HEX", "pdb:NAME/KEY", ...).
func Module(path, id string, base, size uint64) event.Fact {
	f := event.Fact{Kind: event.FactModule, Rundown: true, Pid: Pid, Handle: base, Size: size, Name: path, Detail: id}
	if len(id) > 4 && id[:4] == "pdb:" {
		f.Image = id
	}
	return f
}

// Stack is stack fact id of n user frames from base on, 16 bytes apart.
func Stack(id uint64, n int, base uint64) event.Fact {
	f := event.Fact{Kind: event.FactStack, Handle: id, User: make([]uint64, n)}
	for i := range f.User {
		f.User[i] = base + 0x100 + uint64(i)*16
	}
	return f
}

// ModuleTrace is a trace of events events from stack 1 (frames frames in
// the module at path with identity id).
func ModuleTrace(path, id string, frames, events int) *Trace {
	const base = 0x5555_0000_0000
	t := &Trace{Facts: []event.Fact{
		{Kind: event.FactProcess, Rundown: true, Pid: Pid, Name: "crafted"},
		Module(path, id, base, 1<<30),
		Stack(1, frames, base),
	}}
	for i := range events {
		t.Events = append(t.Events, Write(uint64(i+1), int64(i)*10_000, 1))
	}
	return t
}

// ChurnTrace is issue 25's 26 KB trace that took 1.2 GB: one stack of
// frames frames used by events events, each after a module fact ending
// a mapping nothing made.
func ChurnTrace(frames, events int) *Trace {
	t := ModuleTrace("/opt/app", "gnu:0123456789abcdef0123456789abcdef01234567", frames, events)
	t.Interleave = func(i int) []event.Fact {
		return []event.Fact{{Kind: event.FactModule, End: true, Pid: Pid, Handle: 0x1000 + uint64(i)*0x1000, Time: int64(i) * 10_000}}
	}
	return t
}

// SparseELF writes an ELF file at path whose .symtab claims claim bytes
// at offset 4096, the file extended to hold them as a hole: a few KB on
// disk.
func SparseELF(path string, claim int64) error {
	shstr := "\x00.symtab\x00.strtab\x00.shstrtab\x00"
	const shoff, shnum = 64, 4
	strOff := uint64(shoff + shnum*64)
	secs := []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_SYMTAB), Off: 4096, Size: uint64(claim), Link: 2, Entsize: 24, Addralign: 8},
		{Name: 9, Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: 1, Addralign: 1},
		{Name: 17, Type: uint32(elf.SHT_STRTAB), Off: strOff + 1, Size: uint64(len(shstr)), Addralign: 1},
	}
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: 1, Shoff: shoff,
		Ehsize: 64, Phentsize: 56, Shentsize: 64, Shnum: shnum, Shstrndx: 3}
	copy(h.Ident[:], "\x7fELF\x02\x01\x01")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for _, v := range []any{h, secs, []byte("\x00" + shstr)} {
		if err := binary.Write(f, binary.LittleEndian, v); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Truncate(4096 + claim); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// msfMagic starts a PDB 7.0 file.
const msfMagic = "Microsoft C/C++ MSF 7.00\r\n\x1aDS\x00\x00\x00"

// RepeatedBlockMSF returns a PDB (MSF 7.0) file of blocks of blockSize
// bytes whose stream 1 claims claim bytes by listing one data block over
// and over: the stream directory is the only large part.
func RepeatedBlockMSF(blockSize, claim uint32) []byte {
	le := binary.LittleEndian
	nb := (claim + blockSize - 1) / blockSize
	dir := le.AppendUint32(nil, 2) // streams
	dir = le.AppendUint32(dir, 0)
	dir = le.AppendUint32(dir, claim)
	const data = 2 // block 0: superblock, 1: directory block map, 2: data
	for range nb {
		dir = le.AppendUint32(dir, data)
	}
	nDir := (uint32(len(dir)) + blockSize - 1) / blockSize
	numBlocks := 3 + nDir
	out := make([]byte, int(numBlocks)*int(blockSize))
	copy(out, msfMagic)
	le.PutUint32(out[32:], blockSize)
	le.PutUint32(out[36:], 1) // free block map
	le.PutUint32(out[40:], numBlocks)
	le.PutUint32(out[44:], uint32(len(dir)))
	le.PutUint32(out[52:], 1)
	for i := range nDir {
		le.PutUint32(out[int(blockSize)+4*int(i):], 3+i)
	}
	copy(out[3*int(blockSize):], dir)
	return out
}
