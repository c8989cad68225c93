package event

import "fmt"

// Status is the normalized outcome of an operation.
type Status uint8

// Outcomes.
const (
	StatusUnknown     Status = iota // not completed, or completion not seen
	StatusOK                        // success
	StatusNotFound                  // ENOENT, STATUS_OBJECT_NAME_NOT_FOUND, ...
	StatusDenied                    // EACCES, EPERM, STATUS_ACCESS_DENIED
	StatusExists                    // EEXIST, STATUS_OBJECT_NAME_COLLISION
	StatusInvalid                   // EINVAL, EBADF, STATUS_INVALID_PARAMETER, ...
	StatusBusy                      // EBUSY, EAGAIN, STATUS_SHARING_VIOLATION
	StatusNoSpace                   // ENOSPC, EDQUOT, STATUS_DISK_FULL
	StatusIOError                   // EIO, STATUS_DEVICE_DATA_ERROR, block errors
	StatusEOF                       // STATUS_END_OF_FILE (Linux reports EOF as a 0-byte success)
	StatusNotDir                    // ENOTDIR, EISDIR, STATUS_NOT_A_DIRECTORY, STATUS_FILE_IS_A_DIRECTORY
	StatusInterrupted               // EINTR, STATUS_CANCELLED
	StatusOther                     // any other failure
	numStatuses
)

var statusNames = [...]string{
	"unknown", "ok", "not-found", "denied", "exists", "invalid", "busy",
	"no-space", "io-error", "eof", "not-dir", "interrupted", "error",
}

func (s Status) String() string {
	if s < numStatuses {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// ParseStatus is the inverse of [Status.String], a value without a name
// ("status(200)") included.
func ParseStatus(s string) (Status, error) {
	for i, n := range statusNames {
		if n == s {
			return Status(i), nil
		}
	}
	if v, ok := parseNumbered(s, "status"); ok {
		return Status(v), nil
	}
	return 0, fmt.Errorf("unknown status %q", s)
}

// Failed reports whether s is a failure (neither ok, eof nor unknown).
func (s Status) Failed() bool {
	return s != StatusOK && s != StatusUnknown && s != StatusEOF
}

// errno values (Linux, all architectures iotrace supports).
var errnoTable = map[uint32]struct {
	name   string
	status Status
}{
	1: {"EPERM", StatusDenied}, 2: {"ENOENT", StatusNotFound}, 3: {"ESRCH", StatusNotFound},
	4: {"EINTR", StatusInterrupted}, 5: {"EIO", StatusIOError}, 6: {"ENXIO", StatusNotFound},
	7: {"E2BIG", StatusInvalid}, 8: {"ENOEXEC", StatusInvalid}, 9: {"EBADF", StatusInvalid},
	11: {"EAGAIN", StatusBusy}, 12: {"ENOMEM", StatusOther}, 13: {"EACCES", StatusDenied},
	14: {"EFAULT", StatusInvalid}, 16: {"EBUSY", StatusBusy}, 17: {"EEXIST", StatusExists},
	18: {"EXDEV", StatusInvalid}, 19: {"ENODEV", StatusNotFound}, 20: {"ENOTDIR", StatusNotDir},
	21: {"EISDIR", StatusNotDir}, 22: {"EINVAL", StatusInvalid}, 23: {"ENFILE", StatusOther},
	24: {"EMFILE", StatusOther}, 25: {"ENOTTY", StatusInvalid}, 26: {"ETXTBSY", StatusBusy},
	27: {"EFBIG", StatusNoSpace}, 28: {"ENOSPC", StatusNoSpace}, 29: {"ESPIPE", StatusInvalid},
	30: {"EROFS", StatusDenied}, 31: {"EMLINK", StatusOther}, 32: {"EPIPE", StatusOther},
	36: {"ENAMETOOLONG", StatusInvalid}, 38: {"ENOSYS", StatusInvalid}, 39: {"ENOTEMPTY", StatusExists},
	40: {"ELOOP", StatusInvalid}, 61: {"ENODATA", StatusNotFound}, 75: {"EOVERFLOW", StatusInvalid},
	95: {"EOPNOTSUPP", StatusInvalid}, 110: {"ETIMEDOUT", StatusIOError}, 122: {"EDQUOT", StatusNoSpace},
	125: {"ECANCELED", StatusInterrupted}, 512: {"ERESTARTSYS", StatusInterrupted},
}

// FromErrno maps a Linux errno (positive; 0 is success) to a Status.
func FromErrno(errno uint32) Status {
	if errno == 0 {
		return StatusOK
	}
	if e, ok := errnoTable[errno]; ok {
		return e.status
	}
	return StatusOther
}

// ErrnoName returns the symbolic name of a Linux errno ("ENOENT"), or
// "errno N" when it is not in the table.
func ErrnoName(errno uint32) string {
	if e, ok := errnoTable[errno]; ok {
		return e.name
	}
	return fmt.Sprintf("errno %d", errno)
}

// NTSTATUS values iotrace names.
var ntstatusTable = map[uint32]struct {
	name   string
	status Status
}{
	0x00000000: {"SUCCESS", StatusOK},
	0x00000103: {"PENDING", StatusUnknown},
	0x00000104: {"REPARSE", StatusOK},
	0x80000005: {"BUFFER_OVERFLOW", StatusOK},
	0x80000006: {"NO_MORE_FILES", StatusEOF},
	0xC0000001: {"UNSUCCESSFUL", StatusOther},
	0xC0000002: {"NOT_IMPLEMENTED", StatusInvalid},
	0xC0000008: {"INVALID_HANDLE", StatusInvalid},
	0xC000000D: {"INVALID_PARAMETER", StatusInvalid},
	0xC000000F: {"NO_SUCH_FILE", StatusNotFound},
	0xC0000010: {"INVALID_DEVICE_REQUEST", StatusInvalid},
	0xC0000011: {"END_OF_FILE", StatusEOF},
	0xC0000022: {"ACCESS_DENIED", StatusDenied},
	0xC0000023: {"BUFFER_TOO_SMALL", StatusInvalid},
	0xC0000033: {"OBJECT_NAME_INVALID", StatusInvalid},
	0xC0000034: {"OBJECT_NAME_NOT_FOUND", StatusNotFound},
	0xC0000035: {"OBJECT_NAME_COLLISION", StatusExists},
	0xC000003A: {"OBJECT_PATH_NOT_FOUND", StatusNotFound},
	0xC0000043: {"SHARING_VIOLATION", StatusBusy},
	0xC0000054: {"FILE_LOCK_CONFLICT", StatusBusy},
	0xC0000056: {"DELETE_PENDING", StatusDenied},
	0xC000007F: {"DISK_FULL", StatusNoSpace},
	0xC00000BA: {"FILE_IS_A_DIRECTORY", StatusNotDir},
	0xC00000BB: {"NOT_SUPPORTED", StatusInvalid},
	0xC0000101: {"DIRECTORY_NOT_EMPTY", StatusExists},
	0xC0000103: {"NOT_A_DIRECTORY", StatusNotDir},
	0xC0000120: {"CANCELLED", StatusInterrupted},
	0xC0000185: {"IO_DEVICE_ERROR", StatusIOError},
	0xC000009C: {"DEVICE_DATA_ERROR", StatusIOError},
	0xC0000225: {"NOT_FOUND", StatusNotFound},
}

// FromNTSTATUS maps an NTSTATUS to a Status. Success and informational
// codes (severity 0 and 1) that iotrace does not name are StatusOK;
// warnings and errors it does not name are StatusOther.
func FromNTSTATUS(code uint32) Status {
	if e, ok := ntstatusTable[code]; ok {
		return e.status
	}
	if code>>30 <= 1 {
		return StatusOK
	}
	return StatusOther
}

// NTSTATUSName returns the symbolic name of an NTSTATUS without its
// STATUS_ prefix ("OBJECT_NAME_NOT_FOUND"), or its hex value.
func NTSTATUSName(code uint32) string {
	if e, ok := ntstatusTable[code]; ok {
		return e.name
	}
	return fmt.Sprintf("0x%08X", code)
}
