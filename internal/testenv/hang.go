package testenv

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// DefaultHangLimit is how long a fuzz input may run before FailHung calls
// it a hang, unless IOTRACE_FUZZ_HANG_LIMIT (a time.Duration) says
// otherwise: CI's fuzz runs set a third of their time (5 s of 15), so that
// a hang that starts before their last third is still written down.
const DefaultHangLimit = 10 * time.Second

// FailHung, while fuzzing (-test.fuzz set), crashes the process when stop
// is not called within the hang limit: called around a fuzz target's
// reading, it turns a hang into a failing input that the fuzzer writes to
// testdata/fuzz. Go records a crash; a worker still busy when -fuzztime
// ends is stopped and not reported. A panic in another goroutine cannot
// be recovered, which is the point. Outside fuzzing (the seed corpus as
// a test, the Windows binaries under wine) it does nothing: go test's
// -timeout covers those.
func FailHung(what string) (stop func()) {
	if f := flag.Lookup("test.fuzz"); f == nil || f.Value.String() == "" {
		return func() {}
	}
	limit := DefaultHangLimit
	if d, err := time.ParseDuration(os.Getenv("IOTRACE_FUZZ_HANG_LIMIT")); err == nil && d > 0 {
		limit = d
	}
	t := time.AfterFunc(limit, func() {
		panic(fmt.Sprintf("%s still running after %v: a hang", what, limit))
	})
	return func() { t.Stop() }
}
