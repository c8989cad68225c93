package live

import "testing"

// TestQueueEventAfterClose: a callback that still runs after the queue
// was closed (the consumer did not stop within the stop timeout) is
// counted, not a send on a closed channel.
func TestQueueEventAfterClose(t *testing.T) {
	q := newQueue(4)
	q.closeWork()
	var er EventRecord
	q.Event(&er)
	if n := q.late.Load(); n != 1 {
		t.Fatalf("late = %d, want 1", n)
	}
}
