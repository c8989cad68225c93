// Package fake is a live backend that replays a synthetic trace (package
// internal/synth) as if it were being traced now. It honours the context,
// Options.Duration, Layers, Ops, Pids (with FollowChildren), Comms and
// Command, paces events in real time when asked, and reports Stats like a
// real backend. It is what the CLI's tests and the conformance harness
// (package backendtest) run when no kernel tracing is available.
package fake
