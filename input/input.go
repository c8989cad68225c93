package input

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/resolve"
)

// Reader is an open trace file.
type Reader interface {
	// Format is the name of the file's format ("iot", "jsonl", "etl").
	Format() string
	// Run delivers the whole trace to sink: Begin, facts and events, End.
	// A damaged file delivers everything intact, then End, and returns an
	// error that names the byte offset of the damage.
	Run(ctx context.Context, sink event.Sink) error
	// Close releases the file.
	Close() error
}

// Format is one file format iotrace reads.
type Format struct {
	// Name is the short name ("iot").
	Name string
	// Description says in a few words what the format is.
	Description string
	// Match reports whether a file beginning with head (up to SniffSize
	// bytes, fewer for a short file) is in this format.
	Match func(head []byte) bool
	// Open opens the file at path.
	Open func(path string) (Reader, error)
	// Resolves says that the format's reader resolves names itself;
	// otherwise Open adds a resolver that applies the trace's facts.
	Resolves bool
	// Available returns nil when this build can read the format, or why
	// not. Nil means always.
	Available func() error
}

// LeaveStacks tells r, before Run, that the stacks of its events will not
// be shown: a reader that joins a trace's stack walks to their events
// (.etl) then leaves them aside, counted, and keeps nothing per record
// for them. Other readers ignore it.
func LeaveStacks(r Reader) {
	if s, ok := r.(interface{ leaveStacks() }); ok {
		s.leaveStacks()
	}
}

// SniffSize is the number of bytes Open reads to recognize a format.
const SniffSize = 512

// formats is the table Open dispatches through, in the order formats are
// tried.
var formats = []Format{
	iotFormat,
	jsonlFormat,
	etlFormat,
}

// Formats returns the formats iotrace reads.
func Formats() []Format { return append([]Format(nil), formats...) }

// Open recognizes the format of the file at path from its first bytes and
// opens it.
func Open(path string) (Reader, error) {
	head, err := sniff(path)
	if err != nil {
		return nil, err
	}
	for _, f := range formats {
		if !f.Match(head) {
			continue
		}
		if f.Available != nil {
			if err := f.Available(); err != nil {
				return nil, fmt.Errorf("%s: %s file, but this iotrace cannot read it: %w", path, f.Name, err)
			}
		}
		r, err := f.Open(path)
		if err != nil {
			return nil, err
		}
		if f.Resolves {
			return r, nil
		}
		return resolving{r}, nil
	}
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.Name + " (" + f.Description + ")"
	}
	return nil, fmt.Errorf("%s: not a trace file iotrace can read: it begins with %s; iotrace reads %s",
		path, describe(head), strings.Join(names, ", "))
}

// OpenAll opens the traces of the file at path: one for every format but
// jsonl, whose traces may be concatenated (cat a.jsonl b.jsonl > c.jsonl):
// there each trace is a Reader of its own. Close every Reader returned.
func OpenAll(path string) ([]Reader, error) {
	head, err := sniff(path)
	if err != nil {
		return nil, err
	}
	if !jsonlFormat.Match(head) {
		r, err := Open(path)
		if err != nil {
			return nil, err
		}
		return []Reader{r}, nil
	}
	rs, err := splitJSONL(path)
	if err != nil {
		return nil, err
	}
	for i, r := range rs {
		rs[i] = resolving{r}
	}
	return rs, nil
}

func sniff(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a trace file", path)
	}
	head := make([]byte, SniffSize)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: read: %w", path, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: empty file, not a trace", path)
	}
	return head[:n], nil
}

// describe renders the first bytes of a file for an error message: hex,
// and the text when it is printable.
func describe(head []byte) string {
	n := min(len(head), 16)
	var hex strings.Builder
	for i, c := range head[:n] {
		if i > 0 {
			hex.WriteByte(' ')
		}
		fmt.Fprintf(&hex, "%02x", c)
	}
	printable := true
	for _, r := range string(head[:n]) {
		if !unicode.IsPrint(r) && r != ' ' {
			printable = false
			break
		}
	}
	if printable {
		return fmt.Sprintf("%s (%s)", hex.String(), strconv.Quote(string(head[:n])))
	}
	return hex.String()
}

// resolving wraps a Reader whose format does not resolve names: it
// applies the trace's facts on the way to the sink.
//
// It streams: the tables are bounded (resolve.StreamLimits) and each fact
// is applied when the replay reaches it. A pre-pass over the facts (when
// the reader has one) prepares what must act before its place in the
// stream (resolve.Tables.Prescan): the device and volume names, which
// hold for the whole trace, and the rundowns, so that events recorded
// before a rundown written later (an ETW rundown at the end of a trace, a
// /proc walk finished after the first events) are named by it. Memory is
// bounded by the traced system's state, not by the trace's length; an
// event whose name only a dropped binding could give is counted
// (resolve.DroppedCounter).
type resolving struct{ Reader }

// factScanner is a Reader that can deliver its facts before Run.
type factScanner interface {
	ScanFacts(ctx context.Context, fn func(f *event.Fact) error) error
}

// namedFactScanner is a factScanner that can make the strings of the
// facts named selects only (tracefile.Reader.ScanFactsWhere).
type namedFactScanner interface {
	ScanFactsWhere(ctx context.Context, named func(kind event.FactKind, rundown bool) bool, fn func(f *event.Fact) error) error
}

// prescanNamed selects the facts whose names Prescan uses: rundowns,
// devices and volumes; of the others it needs only the keys.
func prescanNamed(kind event.FactKind, rundown bool) bool {
	return rundown || kind == event.FactDevice || kind == event.FactVolume
}

func (r resolving) Run(ctx context.Context, sink event.Sink) error {
	tables := resolve.NewBoundedTables(resolve.StreamLimits())
	res := resolve.NewTablesResolver(sink, tables)
	prescan := func(f *event.Fact) error {
		tables.Prescan(f)
		return nil
	}
	var err error
	switch fs := r.Reader.(type) {
	case namedFactScanner:
		err = fs.ScanFactsWhere(ctx, prescanNamed, prescan)
	case factScanner:
		err = fs.ScanFacts(ctx, prescan)
	}
	if err != nil {
		return err
	}
	return r.Reader.Run(ctx, res)
}
