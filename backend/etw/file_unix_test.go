//go:build unix

package etw

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend/etw/etl"
	"github.com/iotrace/iotrace/internal/testenv"
)

// TestMappedFileCutWhileRead: ReadFile maps the .etl file; one cut short
// by someone else between the opening and the reading ends the read with
// an error naming the file and offset, instead of a crash.
func TestMappedFileCutWhileRead(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testenv.ETLDir(t), fixtureWin8))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.etl")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := etl.Open(path, etl.Options{Map: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Truncate(path, 64<<10); err != nil {
		t.Fatal(err)
	}
	var d discard
	err = r.Guard(func() error { return Run(context.Background(), FileRecords(r), Options{}, &d) })
	if err == nil || !strings.Contains(err.Error(), "changed while it was read") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v after %d events", err, d.events)
	}
}
