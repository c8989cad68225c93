package pdb

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/crafted"
)

// TestRepeatedBlockClaim: a PDB of a few hundred KB whose stream lists
// one block again and again to claim 1 GiB (issue 25, item 4: 2.1 GB
// taken; 4 GiB claimed ended in Go's fatal out of memory) is refused
// before the stream is read.
func TestRepeatedBlockClaim(t *testing.T) {
	for _, claim := range []uint32{1 << 30, 0xfff00000} {
		b := crafted.RepeatedBlockMSF(32768, claim)
		if len(b) > 1<<20 {
			t.Fatalf("the crafted file is %d bytes", len(b))
		}
		var err error
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = Parse(bytes.NewReader(b), int64(len(b)))
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "listed twice") {
			t.Errorf("claim of %d bytes in a %d-byte file: %v", claim, len(b), err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 100<<20 {
			t.Errorf("claim of %d bytes: %d MB allocated", claim, n>>20)
		}
	}
}
