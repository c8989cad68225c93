// Package filter selects events by process, name, path, op, layer, latency
// and outcome. Every command binds the same flags with [AddFlags]; [New]
// validates the [Options] into a [Filter] whose [Filter.Match] tests one
// event and whose [Filter.Sink] wraps a sink so that only matching events
// reach it (facts, the header and the trailer always pass). Live backends
// take the part the kernel can do through [Options.PushDown].
package filter
