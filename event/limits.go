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
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
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

// Counters of what readers cut to these limits.
const (
	StatPathsCut   = "paths longer than the trace's OS allows, cut to its longest (PATH_MAX on Linux, 32,767 UTF-16 units on Windows)"
	StatStringsCut = "strings longer than the trace's OS allows, cut to its longest"
	StatStacksCut  = "stacks deeper than event.MaxStackFrames, cut (flagged truncated)"
	StatFramesCut  = "stack frames beyond event.MaxStackFrames, cut"
)

// Cuts counts what a reader cut to the limits.
type Cuts struct {
	Paths, Strings, Stacks, Frames uint64
}

// AddTo adds the counters of what was cut (as dropped) to s.
func (c *Cuts) AddTo(s *Stats) {
	for _, x := range []struct {
		name string
		n    uint64
	}{{StatPathsCut, c.Paths}, {StatStringsCut, c.Strings}, {StatStacksCut, c.Stacks}, {StatFramesCut, c.Frames}} {
		if x.n != 0 {
			s.Add(CountDropped, x.name, x.n)
		}
	}
}

// Cutter cuts events and facts to the limits of the OS a trace was
// recorded on, counting what it cut: for readers whose strings and
// stacks are whole in memory already (a jsonl line, an ETW record).
type Cutter struct {
	PathMax, StringMax int
	Cuts
}

// NewCutter returns a Cutter for a trace recorded on os.
func NewCutter(os string) *Cutter {
	return &Cutter{PathMax: MaxPathLen(os), StringMax: MaxStringLen(os)}
}

// Event cuts e's paths and strings.
func (c *Cutter) Event(e *Event) {
	c.path(&e.Path)
	c.path(&e.Path2)
	c.str(&e.Comm)
	c.str(&e.Native)
	c.str(&e.Note)
}

// Fact cuts f's paths, strings and stack.
func (c *Cutter) Fact(f *Fact) {
	if f.Kind == FactName || f.Kind == FactModule || f.Kind == FactVolume {
		c.path(&f.Name)
	} else {
		c.str(&f.Name)
	}
	c.path(&f.Image)
	c.str(&f.Detail)
	if n := f.CapFrames(); n > 0 {
		c.Stacks++
		c.Frames += uint64(n)
	}
}

// EventOver reports whether Event would cut something of e.
func (c *Cutter) EventOver(e *Event) bool {
	return len(e.Path) > c.PathMax || len(e.Path2) > c.PathMax ||
		max(len(e.Comm), len(e.Native), len(e.Note)) > c.StringMax
}

// FactOver reports whether Fact would cut something of f.
func (c *Cutter) FactOver(f *Fact) bool {
	return max(len(f.Name), len(f.Image)) > c.PathMax || max(len(f.Name), len(f.Detail)) > c.StringMax ||
		max(len(f.Kernel), len(f.User)) > MaxStackFrames
}

func (c *Cutter) path(s *string) {
	if len(*s) > c.PathMax {
		*s = CutString(*s, c.PathMax)
		c.Paths++
	}
}

func (c *Cutter) str(s *string) {
	if len(*s) > c.StringMax {
		*s = CutString(*s, c.StringMax)
		c.Strings++
	}
}
