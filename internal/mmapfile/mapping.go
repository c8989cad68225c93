// Package mmapfile maps a section of a file read-only for readers that
// look at every byte of a large file once or twice (jsonl traces, .etl
// files): no copy from the page cache, pages released behind the reader,
// and a file cut short while it is read (the kernel then faults the
// mapping) turned into an error instead of a crash. The standard library
// maps files only inside its own packages, and golang.org/x/exp/mmap
// copies through ReadAt, which is the cost this package avoids.
package mmapfile

import (
	"fmt"
	"runtime/debug"
	"unsafe"
)

// Mapping is a section of a file mapped into memory.
type Mapping struct {
	all     []byte // the mapped pages
	data    []byte // the section, within all
	fileOff int64  // the section's offset in the file
}

// Bytes returns the section. It is valid until Close.
func (m *Mapping) Bytes() []byte { return m.data }

// Guard runs fn, which reads m, and turns a fault on m's pages (the file
// cut short by someone while it is read: the kernel then has no page to
// give) into an error naming where. Faults elsewhere are not this
// function's: they panic as they would have.
func (m *Mapping) Guard(name string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		p := recover()
		if p == nil {
			return
		}
		if f, ok := p.(interface{ Addr() uintptr }); ok {
			base := uintptr(unsafe.Pointer(unsafe.SliceData(m.all)))
			if a := f.Addr(); a >= base && a < base+uintptr(len(m.all)) {
				at := m.fileOff - int64(len(m.all)-len(m.data)) + int64(a-base)
				err = fmt.Errorf("%s: read at byte offset %d: the file changed while it was read (cut short?)", name, at)
				return
			}
		}
		panic(p)
	}()
	return fn()
}
