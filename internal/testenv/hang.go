package testenv

import (
	"fmt"
	"time"
)

// HangLimit is how long a fuzz input may run before FailHung calls it a
// hang: far above any input's time on a loaded machine, far below the
// CI's fuzz times (15 s and 60 s) plus their grace.
const HangLimit = 10 * time.Second

// FailHung crashes the process when stop is not called within HangLimit:
// called around a fuzz target's reading, it turns a hang into a failing
// input that the fuzzer writes to testdata/fuzz (a crash is recorded, a
// hang at the end of -fuzztime is not: Go reports only its own deadline
// then). A panic in another goroutine cannot be recovered, which is the
// point.
func FailHung(what string) (stop func()) {
	t := time.AfterFunc(HangLimit, func() {
		panic(fmt.Sprintf("%s still running after %v: a hang", what, HangLimit))
	})
	return func() { t.Stop() }
}
