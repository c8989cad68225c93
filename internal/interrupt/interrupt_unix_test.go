//go:build unix

package interrupt

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestOneReceiver: a real SIGINT sent to the process, with the handler
// the only receiver, is one signal: a clean stop, never a quit (two
// receivers of one SIGINT once counted it twice).
func TestOneReceiver(t *testing.T) {
	var w syncBuffer
	for i := 0; i < 50; i++ {
		ex := newExits()
		ctx, h := notify(context.Background(), &w, ex.exit)
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("SIGINT did not cancel the context")
		}
		time.Sleep(2 * time.Millisecond)
		h.Stop()
		if len(ex.codes) != 0 {
			t.Fatalf("iteration %d: one SIGINT quit (exit %v)", i, ex.codes)
		}
	}
}
