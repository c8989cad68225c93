package script

import "testing"

// guardBenchScript uses what the memory guard rewrites on every event:
// an augmented assignment to a dict entry and string concatenation.
const guardBenchScript = `
t = {"n": 0, "s": ""}
def on_event(e):
    t["n"] += e.bytes
    t["s"] = e.comm + ":" + e.path
`

// BenchmarkGuardedOps: the cost of the memory guard's checks per event
// (docs/benchmarks.md).
func BenchmarkGuardedOps(b *testing.B) { benchRun(b, guardBenchScript, Options{}) }
