package blockio

import (
	"testing"
	"unsafe"
)

// TestRecordLayout checks the decoder's offsets against the type bpf2go
// generated from struct block_rec.
func TestRecordLayout(t *testing.T) {
	var r blockioBlockRec
	if s := unsafe.Sizeof(r); s != RecordSize {
		t.Fatalf("struct block_rec is %d bytes, RecordSize %d", s, RecordSize)
	}
	for _, c := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"bio", unsafe.Offsetof(r.Bio), 0}, {"rq", unsafe.Offsetof(r.Rq), 8},
		{"queue_ts", unsafe.Offsetof(r.QueueTs), 16}, {"issue_ts", unsafe.Offsetof(r.IssueTs), 24},
		{"done_ts", unsafe.Offsetof(r.DoneTs), 32}, {"cause", unsafe.Offsetof(r.Cause), 40},
		{"sector", unsafe.Offsetof(r.Sector), 48}, {"inode", unsafe.Offsetof(r.Inode), 56},
		{"bytes", unsafe.Offsetof(r.Bytes), 64}, {"opf", unsafe.Offsetof(r.Opf), 68},
		{"dev", unsafe.Offsetof(r.Dev), 72}, {"ino_dev", unsafe.Offsetof(r.InoDev), 76},
		{"pid", unsafe.Offsetof(r.Pid), 80}, {"tid", unsafe.Offsetof(r.Tid), 84},
		{"cpu", unsafe.Offsetof(r.Cpu), 88}, {"done_cpu", unsafe.Offsetof(r.DoneCpu), 92},
		{"done_tid", unsafe.Offsetof(r.DoneTid), 96}, {"status", unsafe.Offsetof(r.Status), 100},
		{"rflags", unsafe.Offsetof(r.Rflags), 102}, {"comm", unsafe.Offsetof(r.Comm), 104},
		{"ustack", unsafe.Offsetof(r.Ustack), 120}, {"kstack", unsafe.Offsetof(r.Kstack), 124},
	} {
		if c.got != c.want {
			t.Errorf("block_rec.%s at %d, decoder reads it at %d", c.name, c.got, c.want)
		}
	}
	if s := unsafe.Sizeof(blockioSyscallCause{}); s != 24 {
		t.Errorf("struct syscall_cause is %d bytes, want 24", s)
	}
}
