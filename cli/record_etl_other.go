//go:build !windows

package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/iotrace/iotrace/backend"
)

// recordETL is Windows-only: an .etl file is written by an ETW file-mode
// session.
func recordETL(context.Context, backend.Options, string, io.Writer) error {
	return fmt.Errorf("recording to .etl uses an ETW file-mode session, which needs Windows (this is %s): record to FILE.iot instead: %w",
		runtime.GOOS, backend.ErrNotSupported)
}
