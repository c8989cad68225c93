// Package where compiles iotrace filter expressions ("op == 'read' and
// latency > ms(10)") into Go predicates over [event.Event], and extracts
// the part of a filter a backend can apply itself (pids, process names,
// layers and ops; see [Pushdown]).
//
// The syntax is a Starlark (Python) expression, parsed once; evaluation
// never runs an interpreter. The fields an expression may name are listed
// by [Fields]; iotrace scripts see the same fields as attributes of their
// event value.
package where
