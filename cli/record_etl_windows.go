//go:build windows

package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/etw/live"
	"github.com/iotrace/iotrace/internal/interrupt"
)

// recordETL records a file-mode ETW kernel session to path.
func recordETL(ctx context.Context, opts backend.Options, path string, stderr io.Writer) error {
	opts.Warn = func(msg string) { fmt.Fprintf(stderr, "iotrace: %s\n", msg) }
	defer interrupt.OnQuit(ctx, live.StopActive)()
	st, err := live.New(live.Config{}).RecordETL(ctx, opts, path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "iotrace: wrote %s (%d buffers; %d events lost, %d buffers lost)\n",
		path, st.BuffersWritten, st.EventsLost, st.LogBuffersLost)
	return nil
}
