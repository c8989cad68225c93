package input

import (
	"context"
	"fmt"

	"github.com/iotrace/iotrace/backend/etw"
	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/event"
)

// etlFormat reads Windows Event Trace Logs (.etl) on any OS: the kernel
// FileIo, DiskIo, Process, Thread and Image events and the Kernel-File
// provider's, paired and resolved by package etw (which applies the
// trace's own name, process and volume facts, so Resolves is set).
var etlFormat = Format{
	Name:        "etl",
	Description: "Windows Event Trace Log (ETW)",
	Match:       etw.LooksLikeETL,
	Open:        openETL,
	Resolves:    true,
}

type etlReader struct {
	path     string
	r        *etl.Reader
	noStacks bool // LeaveStacks
}

// leaveStacks implements LeaveStacks: the pipeline leaves the stack walks
// aside (etw.Options.NoStacks).
func (e *etlReader) leaveStacks() { e.noStacks = true }

func openETL(path string) (Reader, error) {
	r, err := etl.Open(path, etl.Options{Map: true})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &etlReader{path: path, r: r}, nil
}

func (e *etlReader) Format() string { return "etl" }

// Run reads the trace into sink, its stacks and strings cut to the limits
// of a Windows trace (cutSink).
func (e *etlReader) Run(ctx context.Context, sink event.Sink) error {
	cut := newCutSink(sink)
	if err := e.r.Guard(func() error { return etw.Run(ctx, etw.FileRecords(e.r), etw.Options{NoStacks: e.noStacks}, cut) }); err != nil {
		return fmt.Errorf("read %s: %w", e.path, err)
	}
	return nil
}

func (e *etlReader) Close() error { return e.r.Close() }
