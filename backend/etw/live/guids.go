package live

import "fmt"

// Session GUIDs.
//
// A session's GUID (Wnode.Guid) carries its security: Windows lets a user
// who is not an administrator start a kernel session only when the
// session's GUID and the kernel provider's (SystemTraceControlGUID) both
// grant it access (the SystemTraceProvider documentation), and two
// running sessions cannot share a GUID. A fresh random GUID per run
// could never be granted in advance, so iotrace's sessions take their
// GUID from a small fixed set: for each kind of session (main or
// recording, rundown, image-load companion) numSlots GUIDs, the first
// one no running session holds. `iotrace sessions grant USER` grants
// all of them (and the kernel provider) once; the set is printed by
// SessionGUIDs.

// sessionKind tells iotrace's sessions apart in their GUIDs.
type sessionKind byte

const (
	kindMain    sessionKind = 'm' // trace, record
	kindRundown sessionKind = 'r'
	kindImages  sessionKind = 'i'
)

// numSlots is how many sessions of one kind may run at the same time: as
// many as Windows has kernel logger slots.
const numSlots = 8

// sessionGUID returns the GUID of slot slot of kind k:
// 1f0e5f22-6d0b-4c1e-9a4e-696f7473KKSS (KK the kind's letter, SS the
// slot), next to iotrace's provider GUID 1f0e5f21-….
func sessionGUID(k sessionKind, slot int) GUID {
	return GUID{0x1f0e5f22, 0x6d0b, 0x4c1e, [8]byte{0x9a, 0x4e, 0x69, 0x6f, 0x74, 0x73, byte(k), byte(slot)}}
}

// SessionGUIDs returns every GUID iotrace's sessions may take.
func SessionGUIDs() []GUID {
	var out []GUID
	for _, k := range []sessionKind{kindMain, kindRundown, kindImages} {
		for i := 0; i < numSlots; i++ {
			out = append(out, sessionGUID(k, i))
		}
	}
	return out
}

// String formats g as Windows does ({…} aside).
func (g GUID) String() string {
	return fmt.Sprintf("%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", g.Data1, g.Data2, g.Data3,
		g.Data4[0], g.Data4[1], g.Data4[2], g.Data4[3], g.Data4[4], g.Data4[5], g.Data4[6], g.Data4[7])
}

// freeSlots returns the slots of kind k no running session holds, in
// order (running: QueryAllTraces's answer).
func freeSlots(k sessionKind, running []SessionStatus) []int {
	used := map[GUID]bool{}
	for i := range running {
		used[running[i].Guid] = true
	}
	var out []int
	for i := 0; i < numSlots; i++ {
		if !used[sessionGUID(k, i)] {
			out = append(out, i)
		}
	}
	return out
}
