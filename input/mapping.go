package input

import (
	"fmt"
	"runtime/debug"
	"unsafe"
)

// mapping is a section of a file mapped into memory, read without copying
// (jsonl traces: every line is looked at once per pass, and copying the
// file from the page cache was a tenth of a report).
type mapping struct {
	all     []byte // the mapped pages
	data    []byte // the section, within all
	fileOff int64  // the section's offset in the file
}

// guard runs fn, which reads m, and turns a fault on m's pages (the file
// cut short by someone while it is read: the kernel then has no page to
// give) into an error naming where. Faults elsewhere are not this
// function's: they panic as they would have.
func (m *mapping) guard(name string, fn func() error) (err error) {
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
