package marker

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// DefaultDir is where running traces listen.
const DefaultDir = "/run/iotrace"

// MaxText is the longest marker text carried; longer texts are cut.
const MaxText = 4000

// Mark is one marker received.
type Mark struct {
	// Time is the sender's CLOCK_BOOTTIME in ns.
	Time uint64
	// Pid is the sender's process (from the kernel); Tid its thread (as
	// it said).
	Pid, Tid uint32
	Text     string
}

const magic = "IOTMARK1"

// encode builds the datagram for text.
func encode(t uint64, tid uint32, text string) []byte {
	if len(text) > MaxText {
		text = text[:MaxText]
	}
	b := make([]byte, 0, len(magic)+12+len(text))
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint64(b, t)
	b = binary.LittleEndian.AppendUint32(b, tid)
	return append(b, text...)
}

// decode parses a datagram.
func decode(b []byte) (Mark, error) {
	if len(b) < len(magic)+12 || string(b[:len(magic)]) != magic {
		return Mark{}, errors.New("marker: not an iotrace marker datagram")
	}
	b = b[len(magic):]
	m := Mark{Time: binary.LittleEndian.Uint64(b), Tid: binary.LittleEndian.Uint32(b[8:])}
	text := b[12:]
	if len(text) > MaxText {
		return Mark{}, fmt.Errorf("marker: text of %d bytes, more than %d", len(text), MaxText)
	}
	m.Text = string(text)
	return m, nil
}
