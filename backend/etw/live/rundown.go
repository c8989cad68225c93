package live

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/backend/etw/record"
)

// The rundown session.
//
// Stopping a kernel session with the DISK_FILE_IO flag makes the kernel
// enumerate every open file (FileIo FileRundown: FileKey and NT path),
// which names the I/O of files opened before the trace. iotrace runs a
// short session for it before the main one, in file mode, as rustinel
// does: ControlTrace(STOP) returns once the rundown is in the file
// (about 100 ms for 26,000 files on Windows 11), and the file is read by
// the .etl reader. A real-time rundown session would have to be
// connected to before its stop, which is the very moment the rundown is
// logged. The file lives in a private temporary directory, removed once
// read.

// Rundown counter names.
const (
	StatRundownRecords    = "etw: rundown session records (files open before the trace)"
	StatRundownUnfinished = "etw: rundown session did not finish in time (names of files opened before the trace may be missing)"
	StatRundownLost       = "etw: rundown session events lost (names of files opened before the trace may be missing)"
	StatRundownUnused     = "etw: rundown session records not used (disk I/O during the rundown)"
)

// rundown is what the rundown session gave.
type rundown struct {
	// recs are its file-name records, in time order.
	recs []record.Record
	// header is its file's header (CPU speed, clock).
	header etl.LogfileHeader
	// lost counts the events and buffers the session lost; unused the
	// records that are not file names.
	lost, unused uint64
	// finished is false when the stop did not return in time.
	finished bool
}

// runRundown starts the rundown session cfg (its LogFile set here),
// stops it at once and reads its file, waiting at most timeout for the
// stop. A nil rundown means the session could not start (the error
// says why); with a rundown, the error says what went wrong after.
func runRundown(api API, cfg *SessionConfig, timeout time.Duration, warn func(string)) (*rundown, error) {
	dir, err := os.MkdirTemp("", "iotrace-rundown-")
	if err != nil { // no rundown, but the trace goes on
		return &rundown{finished: true}, fmt.Errorf("rundown session: a directory for its file: %w (names of files opened before the trace may be missing)", err)
	}
	path := filepath.Join(dir, "rundown.etl")
	cleanup := func() {
		_ = os.Remove(path)
		_ = os.Remove(dir)
	}
	cfg.LogFile = path
	s, err := startKernel(api, cfg, kindRundown, false, warn)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("rundown session: %w", err)
	}
	stopped := make(chan struct{})
	go func() {
		s.stopSession()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(timeout):
		go func() { <-stopped; cleanup() }()
		return &rundown{}, nil
	}
	defer cleanup()
	rd := &rundown{finished: true, lost: uint64(s.status.EventsLost) + uint64(s.status.LogBuffersLost)}
	if s.serr != nil {
		return rd, fmt.Errorf("rundown session: stop: %w", s.serr)
	}
	return rd, rd.read(path)
}

// read reads the rundown file, keeping its file-name records.
func (rd *rundown) read(path string) error {
	r, err := etl.Open(path, etl.Options{})
	if err != nil {
		return fmt.Errorf("rundown session: its file: %w", err)
	}
	defer r.Close()
	rd.header = *r.Header()
	_, err = r.Read(context.Background(), func(rec *record.Record) error {
		if isFileName(rec) {
			rd.recs = append(rd.recs, rec.Clone())
		} else if !isTraceHeader(rec) {
			rd.unused++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rundown session: its file: %w (the records before the damage are used)", err)
	}
	return nil
}

// isFileName reports whether r is a FileIo name record (Name,
// FileCreate, FileDelete, FileRundown).
func isFileName(r *record.Record) bool {
	if r.Provider != kernel.GUIDFileIo {
		return false
	}
	switch r.Opcode {
	case kernel.OpcodeFileName, kernel.OpcodeFileCreateName, kernel.OpcodeFileDeleteName, kernel.OpcodeFileRundown:
		return true
	}
	return false
}

// isTraceHeader reports whether r is the EventTrace header record of a
// file.
func isTraceHeader(r *record.Record) bool { return r.Provider == kernel.GUIDEventTrace }
