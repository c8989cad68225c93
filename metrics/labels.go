package metrics

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/iotrace/iotrace/event"
)

// maxLabelBytes bounds a label value taken from the traced system (a
// Windows image name can be long); longer values are cut and end in "…".
const maxLabelBytes = 128

// labelValue turns a name from the traced system into a label value:
// valid UTF-8 (Prometheus requires it: each byte of an invalid sequence
// becomes <0xNN>, so distinct names stay distinct) of at most
// maxLabelBytes.
func labelValue(s string) string {
	if len(s) <= maxLabelBytes && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			b.WriteString("<0x")
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&15, 16))
			b.WriteString(">")
			i++
		} else {
			b.WriteString(s[i : i+n])
			i += n
		}
		if b.Len() > maxLabelBytes {
			return cutLabel(b.String())
		}
	}
	return b.String()
}

// cutLabel cuts a valid UTF-8 string to maxLabelBytes at a rune boundary
// and marks the cut.
func cutLabel(s string) string {
	n := maxLabelBytes - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// isWindows reports whether a trace names its results by NTSTATUS.
func isWindows(h *event.Header) bool {
	return h.OS == "windows" || h.Source == event.SourceETWLive || h.Source == event.SourceETLFile
}

// errorName names a failed event's result the way the trace's OS does
// (as the report command does): ENOENT, OBJECT_NAME_NOT_FOUND, or the
// normalized status when the raw code is 0.
func errorName(e *event.Event, windows bool) string {
	switch {
	case windows:
		return event.NTSTATUSName(e.Code)
	case e.Code == 0:
		return e.Status.String()
	}
	return event.ErrnoName(e.Code)
}

// movesData reports whether op's bytes are data moved, as the report
// command counts them: reads, writes, copies, asynchronous requests and
// block reads and writes (not an lseek's offset or a readdir's entries).
func movesData(op event.Op) bool {
	switch op {
	case event.OpRead, event.OpWrite, event.OpCopy, event.OpAsync, event.OpBlockRead, event.OpBlockWrite:
		return true
	}
	return false
}

// dataBytes is the byte count of an event as the report command takes
// it: what the operation did, else a block I/O's size, except for a block
// I/O whose completion was never seen (its bytes are not known to have
// moved).
func dataBytes(e *event.Event) uint64 {
	if e.Bytes >= 0 {
		return uint64(e.Bytes)
	}
	if e.Layer == event.LayerBlock && e.Flags&event.FlagNoCompletion == 0 {
		return e.Size
	}
	return 0
}
