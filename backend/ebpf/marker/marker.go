package marker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/iotrace/iotrace/ring"
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
	// Uid is the sender's user (from the kernel).
	Uid  uint32
	Text string
	// SaveRefused marks a request to save a flight recorder
	// (ring.SavePrefix) from a sender that may not ask for one: neither
	// root nor the recording's user. Its text says so instead of asking.
	SaveRefused bool
}

// RefusedPrefix starts the text of a save request that was refused (it
// replaces ring.SavePrefix): the marker stays in the trace, and no
// flight recorder saves.
const RefusedPrefix = "[iotrace save refused]"

// mayAskToSave reports whether a sender of user uid may ask a flight
// recorder run by user self to save: root or the recorder's own user.
// Any local user may add a marker; only those may make it write a file.
func mayAskToSave(uid, self uint32) bool { return uid == 0 || uid == self }

// guardSave turns a save request from a sender who may not ask into a
// plain marker saying it was refused; known says whether the kernel gave
// the sender's credentials.
func guardSave(m *Mark, known bool, self uint32) {
	if !strings.HasPrefix(m.Text, ring.SavePrefix) || known && mayAskToSave(m.Uid, self) {
		return
	}
	m.Text = RefusedPrefix + strings.TrimPrefix(m.Text, ring.SavePrefix)
	m.SaveRefused = true
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
