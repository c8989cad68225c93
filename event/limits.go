package event

import "unicode/utf8"

// Limits of what readers take from a trace file. A real system stays
// within them, so a deeper stack or a longer string in a file was built to
// make a reader allocate, or a command write, far more than the file
// holds: readers cut what goes beyond (at decode, before anything else
// sees it), flag it and count it.

// MaxStackFrames is the most frames a stack's kernel part holds, and the
// most its user part holds. Linux walks at most 127 of each
// (PERF_MAX_STACK_DEPTH), ETW at most 192 in all. A part cut to it gets
// FactKernelTruncated or FactUserTruncated: its outer frames are missing.
const MaxStackFrames = 256

// Longest strings, in bytes of UTF-8.
const (
	// MaxPathLinux is PATH_MAX: a Linux path, its terminating NUL
	// included, takes at most 4096 bytes.
	MaxPathLinux = 4096
	// MaxStringLinux is MAX_ARG_STRLEN, the longest argument or
	// environment string: the longest string a Linux trace carries
	// besides paths (a command line is kept to one such string).
	MaxStringLinux = 128 << 10
	// MaxStringWindows is the longest Windows path or command line:
	// 32,767 UTF-16 code units, each at most 3 bytes in UTF-8.
	MaxStringWindows = 3 * 32767
)

// MaxPathLen returns the longest path a trace recorded on os ("linux",
// "windows", or "" when unknown) can hold, in bytes.
func MaxPathLen(os string) int {
	if os == "linux" {
		return MaxPathLinux
	}
	return MaxStringWindows
}

// MaxStringLen returns the longest string of any other kind (a command
// line, a name, a note) a trace recorded on os can hold, in bytes.
func MaxStringLen(os string) int {
	if os == "linux" {
		return MaxStringLinux
	}
	return MaxStringWindows
}

// CutString returns s cut to at most n bytes, at a UTF-8 character
// boundary when s is valid there.
func CutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

// CapFrames cuts a FactStack's kernel and user parts to MaxStackFrames
// each, flagging a cut part truncated, and returns the number of frames
// cut.
func (f *Fact) CapFrames() int {
	cut := 0
	if n := len(f.Kernel); n > MaxStackFrames {
		f.Kernel = f.Kernel[:MaxStackFrames:MaxStackFrames]
		f.Flags |= FactKernelTruncated
		cut += n - MaxStackFrames
	}
	if n := len(f.User); n > MaxStackFrames {
		f.User = f.User[:MaxStackFrames:MaxStackFrames]
		f.Flags |= FactUserTruncated
		cut += n - MaxStackFrames
	}
	return cut
}
