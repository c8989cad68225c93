package ftrace

import (
	"bytes"
	"encoding/binary"
	"testing"
)

var hdr6 = PageHeader{TimestampOffset: 0, CommitOffset: 8, CommitSize: 8, DataOffset: 16}

// pageBuilder writes a ring-buffer page as the kernel does.
type pageBuilder struct {
	data []byte
	ts   uint64
}

func (p *pageBuilder) word(typ, delta uint32, rest ...uint32) {
	p.data = binary.LittleEndian.AppendUint32(p.data, typ|delta<<5)
	for _, w := range rest {
		p.data = binary.LittleEndian.AppendUint32(p.data, w)
	}
}

// small appends a record of len(rec) bytes (a multiple of 4, <= 112).
func (p *pageBuilder) small(delta uint32, rec []byte) {
	p.word(uint32(len(rec)/4), delta)
	p.data = append(p.data, rec...)
}

// long appends a record whose length follows the header.
func (p *pageBuilder) long(delta uint32, rec []byte) {
	p.word(0, delta, uint32(len(rec)+4))
	p.data = append(p.data, rec...)
}

func (p *pageBuilder) page(size int, commitFlags uint64, tail []byte) []byte {
	b := make([]byte, 16, size)
	binary.LittleEndian.PutUint64(b, p.ts)
	binary.LittleEndian.PutUint64(b[8:], uint64(len(p.data))|commitFlags)
	b = append(b, p.data...)
	b = append(b, tail...)
	return b[:size:size]
}

type got struct {
	ts  uint64
	rec string
}

func decodeAll(t *testing.T, b []byte) ([]got, PageInfo, error) {
	t.Helper()
	var out []got
	info, err := DecodePage(b, hdr6, func(ts uint64, rec []byte) { out = append(out, got{ts, string(rec)}) })
	return out, info, err
}

// TestDecodePage: records small and long, a time extend, an absolute time
// stamp, a discarded record (padding with a length), the empty end.
func TestDecodePage(t *testing.T) {
	p := &pageBuilder{ts: 1_000_000}
	p.small(5, []byte("abcd"))
	p.long(7, bytes.Repeat([]byte("L"), 120))
	p.word(typeTimeExtend, 3, 2) // + 2<<27 + 3
	p.small(0, []byte("efgh"))
	p.word(typePadding, 9, 8) // a discarded record of 8 bytes after its header (the length word included): its delta does not count
	p.data = append(p.data, make([]byte, 4)...)
	p.word(typeTimeStamp, 11, 0) // absolute 11
	p.small(1, []byte("ijkl"))
	p.word(typePadding, 0) // the rest is empty
	out, info, err := decodeAll(t, p.page(4096, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []got{
		{1_000_005, "abcd"},
		{1_000_012, string(bytes.Repeat([]byte("L"), 120))},
		{1_000_015 + 2<<27, "efgh"},
		{12, "ijkl"},
	}
	if len(out) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(out), len(want), out)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, out[i], want[i])
		}
	}
	if info.Missed {
		t.Error("missed events on a complete page")
	}
}

// TestDecodePageMissed: the commit word's flags and the stored count.
func TestDecodePageMissed(t *testing.T) {
	p := &pageBuilder{ts: 5}
	p.small(1, []byte("abcd"))
	tail := binary.LittleEndian.AppendUint64(nil, 42)
	_, info, err := decodeAll(t, p.page(4096, missedEvents|missedStored, tail))
	if err != nil || !info.Missed || info.MissedCount != 42 {
		t.Errorf("info %+v, err %v; want 42 missed", info, err)
	}
	_, info, err = decodeAll(t, p.page(4096, missedEvents, nil))
	if err != nil || !info.Missed || info.MissedCount != 0 {
		t.Errorf("info %+v, err %v; want missed, count unknown", info, err)
	}
}

// TestDecodePageDamage: a record past the data, a commit past the page,
// a short page: errors, after the records before the damage.
func TestDecodePageDamage(t *testing.T) {
	p := &pageBuilder{ts: 5}
	p.small(1, []byte("abcd"))
	p.word(0, 1, 4000) // says 4000 bytes
	out, _, err := decodeAll(t, p.page(4096, 0, nil))
	if err == nil || len(out) != 1 {
		t.Errorf("records %d, err %v; want the first record and an error", len(out), err)
	}
	b := p.page(4096, 0, nil)
	binary.LittleEndian.PutUint64(b[8:], 5000)
	if _, _, err := decodeAll(t, b); err == nil {
		t.Error("a commit past the page decoded")
	}
	if _, _, err := decodeAll(t, b[:10]); err == nil {
		t.Error("a 10-byte page decoded")
	}
}

func FuzzDecodePage(f *testing.F) {
	p := &pageBuilder{ts: 1 << 40}
	p.small(5, []byte("abcdefgh"))
	p.long(7, bytes.Repeat([]byte("L"), 120))
	p.word(typeTimeExtend, 3, 2)
	p.word(typeTimeStamp, 11, 1)
	p.small(0, []byte("efgh"))
	f.Add(p.page(256, 0, nil))
	f.Add(p.page(256, missedEvents|missedStored, []byte{1, 0, 0, 0, 0, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		DecodePage(b, hdr6, func(ts uint64, rec []byte) {
			n += len(rec)
			if len(rec) > len(b) {
				t.Fatalf("record of %d bytes from a page of %d", len(rec), len(b))
			}
		})
		if n > len(b) {
			t.Fatalf("%d record bytes from a page of %d", n, len(b))
		}
	})
}
