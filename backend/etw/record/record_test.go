package record

import (
	"bytes"
	"testing"
)

// TestClone checks that a clone keeps its payload and extended data when
// the reader reuses its buffer.
func TestClone(t *testing.T) {
	buf := []byte("payload and ext")
	r := Record{Opcode: 7, UserData: buf[:7], Ext: []ExtItem{{Type: 3, Data: buf[12:]}}}
	c := r.Clone()
	for i := range buf {
		buf[i] = 0
	}
	if c.Opcode != 7 || !bytes.Equal(c.UserData, []byte("payload")) || len(c.Ext) != 1 ||
		c.Ext[0].Type != 3 || !bytes.Equal(c.Ext[0].Data, []byte("ext")) {
		t.Fatalf("clone changed with the buffer: %+v", c)
	}
}
