package ebpf

import "testing"

// TestCounterNumbering: the BPF enum counter and counters.go number the
// same counters (C_MAX entries in the map, numCounters descriptions).
func TestCounterNumbering(t *testing.T) {
	spec, err := loadIotrace()
	if err != nil {
		t.Fatal(err)
	}
	if n := spec.Maps["counters"].MaxEntries; n != numCounters {
		t.Errorf("BPF counters map has %d entries (C_MAX), counters.go describes %d", n, numCounters)
	}
}
