// Package backendtest is the conformance harness every live backend runs
// in its tests: [Run] checks the contract of backend.Backend (Begin first
// and End last exactly once, also on cancellation and sink errors; valid
// events; a prompt stop on cancel; layer and pid filters honoured; stats
// present and problems counted). [Checker] is the stream validator it
// uses, an event.Sink that file readers can run too.
package backendtest
