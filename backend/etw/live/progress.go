package live

import (
	"time"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// startProgress calls progress (backend.Options.Progress; nothing when
// nil) every backend.ProgressEvery with the counters the trailer will
// carry that are known while the session runs: its loss counts (queried
// with ControlTrace) and the queue's. It returns the function that stops
// it, to call before the session stops.
func startProgress(progress func(event.Stats), api API, s *session, q *queue) (stop func()) {
	if progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(backend.ProgressEvery)
		defer tick.Stop()
		for {
			progress(progressStats(api, s, q))
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// progressStats are the running session's counters, named as in the
// trailer.
func progressStats(api API, s *session, q *queue) event.Stats {
	var st event.Stats
	st.Add(event.CountInfo, StatReceived, q.received.Load())
	if ss, err := api.ControlTrace(s.handle, s.name, ControlQuery); err == nil {
		st.Add(event.CountLost, StatSessionEventsLost, uint64(ss.EventsLost))
		st.Add(event.CountLost, StatRealTimeBufLost, uint64(ss.RealTimeBuffersLost))
		st.Add(event.CountLost, StatLogBufLost, uint64(ss.LogBuffersLost))
	}
	st.Add(event.CountLost, StatRTLostEvents, q.lostRT.Load())
	st.Add(event.CountDropped, StatQueueOverflow, q.overflow.Load())
	st.Add(event.CountDropped, StatAfterClose, q.late.Load())
	return st
}
