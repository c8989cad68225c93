package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iotrace/iotrace/rotate"
)

// rotateFlags are record's flags for a rotated series of files.
type rotateFlags struct {
	rotate   []string
	keep     int
	maxTotal string
}

func addRotateFlags(cmd *cobra.Command, r *rotateFlags) {
	fs := cmd.Flags()
	fs.StringSliceVar(&r.rotate, "rotate", nil, "start a new file every DURATION (1h) or SIZE (1GiB), or both (--rotate 1h,1GiB): -o then names the directory (or DIR/PREFIX.iot) of a series of self-contained files named with host and UTC start time")
	fs.IntVar(&r.keep, "keep", 0, "with --rotate: keep only the newest N files of the series (older ones are removed: only traces of this host recorded by this user before this recording, and this recording's own)")
	fs.StringVar(&r.maxTotal, "max-total", "", "with --rotate: remove the oldest files of the series (as --keep chooses them) while they take more than SIZE together")
}

// set reports whether any rotation flag was given.
func (r *rotateFlags) set() bool { return len(r.rotate) > 0 || r.keep != 0 || r.maxTotal != "" }

// options turns the flags and -o into rotate.Options. -o is an existing
// directory (files DIR/HOST-TIME.iot) or DIR/PREFIX.iot (files
// DIR/PREFIX-HOST-TIME.iot).
func (r *rotateFlags) options(out string, stderr io.Writer) (rotate.Options, error) {
	var o rotate.Options
	if len(r.rotate) == 0 {
		return o, fmt.Errorf("--keep and --max-total go with --rotate")
	}
	for _, v := range r.rotate {
		v = strings.TrimSpace(v)
		if d, err := time.ParseDuration(v); err == nil {
			if d <= 0 {
				return o, fmt.Errorf("--rotate %s: want a positive duration", v)
			}
			if o.Every != 0 {
				return o, fmt.Errorf("--rotate: two durations (%s and %s)", o.Every, v)
			}
			o.Every = d
			continue
		}
		n, err := parseSize(v)
		if err != nil {
			return o, fmt.Errorf("--rotate %q: want a duration (1h, 30m) or a size (1GiB, 500M)", v)
		}
		if o.MaxBytes != 0 {
			return o, fmt.Errorf("--rotate: two sizes")
		}
		o.MaxBytes = int64(n)
	}
	if r.keep < 0 {
		return o, fmt.Errorf("--keep %d: want a positive number", r.keep)
	}
	o.Keep = r.keep
	if r.maxTotal != "" {
		n, err := parseSize(r.maxTotal)
		if err != nil {
			return o, fmt.Errorf("--max-total: %w", err)
		}
		o.MaxTotal = int64(n)
	}
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		o.Dir = out
	} else if strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(filepath.Separator)) {
		return o, fmt.Errorf("-o %s: no such directory", out)
	} else {
		if !strings.HasSuffix(strings.ToLower(out), ".iot") {
			return o, fmt.Errorf("-o %s: with --rotate, give a directory or DIR/PREFIX.iot", out)
		}
		o.Dir = filepath.Dir(out)
		o.Prefix = strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
	}
	o.OnFile = func(path string, events uint64) {
		fmt.Fprintf(stderr, "iotrace: wrote %s (%d events)\n", path, events)
	}
	return o, nil
}
