package event

import (
	"math"
	"testing"
)

func TestIdleThreadsOfTwoCPUsStayApart(t *testing.T) {
	// Two block completions on the idle threads of CPU 0 and CPU 1 and
	// one ordinary thread seen on both CPUs.
	evs := []Event{
		{Pid: 0, Tid: 0, CPU: 0},
		{Pid: 0, Tid: 0, CPU: 1},
		{Pid: 0, Tid: 0, CPU: 1},
		{Pid: 42, Tid: 43, CPU: 0},
		{Pid: 42, Tid: 43, CPU: 1},
	}
	count := map[ThreadKey]int{}
	for i := range evs {
		count[evs[i].Thread()]++
	}
	if len(count) != 3 {
		t.Fatalf("got %d thread keys, want 3: %v", len(count), count)
	}
	if n := count[MakeThreadKey(0, 0, 0)]; n != 1 {
		t.Errorf("idle thread of cpu0: %d events, want 1", n)
	}
	if n := count[MakeThreadKey(0, 0, 1)]; n != 2 {
		t.Errorf("idle thread of cpu1: %d events, want 2", n)
	}
	if n := count[MakeThreadKey(42, 43, 7)]; n != 2 {
		t.Errorf("thread 42/43 split across CPUs: %d events under one key, want 2", n)
	}
	if !MakeThreadKey(0, 0, 3).IsIdle() || MakeThreadKey(1, 2, 3).IsIdle() {
		t.Error("IsIdle")
	}
}

func TestProcessKeySurvivesPidReuse(t *testing.T) {
	a := Event{Pid: 100, ProcStart: 10}
	b := Event{Pid: 100, ProcStart: 5000}
	if a.Process() == b.Process() {
		t.Fatal("two processes with the same pid and different start times share a key")
	}
}

func TestNamesRoundTrip(t *testing.T) {
	for o := Op(0); o < numOps; o++ {
		got, err := ParseOp(o.String())
		if err != nil || got != o {
			t.Errorf("ParseOp(%q) = %v, %v", o, got, err)
		}
	}
	for s := Source(0); s < numSources; s++ {
		if got, err := ParseSource(s.String()); err != nil || got != s {
			t.Errorf("ParseSource(%q) = %v, %v", s, got, err)
		}
	}
	for s := Status(0); s < numStatuses; s++ {
		if got, err := ParseStatus(s.String()); err != nil || got != s {
			t.Errorf("ParseStatus(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseOp("frobnicate"); err == nil {
		t.Error("ParseOp accepted an unknown op")
	}
}

func TestStatusMapping(t *testing.T) {
	if FromErrno(2) != StatusNotFound || ErrnoName(2) != "ENOENT" {
		t.Error("ENOENT")
	}
	if FromErrno(0) != StatusOK || FromErrno(9999) != StatusOther {
		t.Error("errno 0 / unknown")
	}
	if FromNTSTATUS(0xC0000034) != StatusNotFound || NTSTATUSName(0xC0000034) != "OBJECT_NAME_NOT_FOUND" {
		t.Error("OBJECT_NAME_NOT_FOUND")
	}
	if FromNTSTATUS(0x40000000) != StatusOK || FromNTSTATUS(0xC0FFEE00) != StatusOther {
		t.Error("unnamed NTSTATUS severities")
	}
}

func TestClockToNanos(t *testing.T) {
	cases := []struct {
		c    Clock
		ts   int64
		want int64
	}{
		{Clock{Kind: ClockQPC, Freq: 10_000_000, Origin: 1000}, 1000 + 31_941, 3_194_100},
		{Clock{Kind: ClockQPC, Freq: 3_117_777, Origin: 0}, 3_117_777 * 5, 5_000_000_000},
		{Clock{Kind: ClockMonotonic, Freq: 1_000_000_000, Origin: 50}, 150, 100},
		{Clock{Kind: ClockFiletime, Freq: 10_000_000, Origin: 0}, 10, 1000},
		// Large timestamps must not overflow.
		{Clock{Kind: ClockCycles, Freq: 3_592_000_000, Origin: 0}, 3_592_000_000 * 86400 * 30, 86400 * 30 * 1_000_000_000},
		{Clock{Kind: ClockQPC, Freq: 3_117_777, Origin: 0}, -3_117_777 * 5, -5_000_000_000},
		// Beyond what int64 nanoseconds hold: saturated, never wrapped
		// (a record timestamp near 2^62 of a 10 MHz clock printed at
		// -0.0002 s).
		{Clock{Kind: ClockQPC, Freq: 10_000_000, Origin: 1_000_000}, 1 << 62, math.MaxInt64},
		{Clock{Kind: ClockQPC, Freq: 10_000_000, Origin: 1_000_000}, -1 << 62, math.MinInt64},
		{Clock{Kind: ClockQPC, Freq: 10_000_000, Origin: -5}, math.MaxInt64, math.MaxInt64},
		{Clock{Kind: ClockMonotonic, Freq: 1_000_000_000, Origin: 5}, math.MinInt64, math.MinInt64},
		{Clock{Kind: ClockQPC, Freq: 3_117_777, Origin: 0}, math.MaxInt64, math.MaxInt64},
		{Clock{Kind: ClockCycles, Freq: 1 << 63, Origin: 0}, math.MaxInt64, 999_999_999},
		{Clock{Kind: ClockQPC, Freq: 1, Origin: 0}, 1 << 40, math.MaxInt64},
	}
	for _, c := range cases {
		if got := c.c.ToNanos(c.ts); got != c.want {
			t.Errorf("%v.ToNanos(%d) = %d, want %d", c.c, c.ts, got, c.want)
		}
	}
}

func TestStats(t *testing.T) {
	var s Stats
	s.Add(CountLost, "ringbuf (cpu 0)", 3)
	s.Add(CountLost, "ringbuf (cpu 0)", 2)
	s.Add(CountInfo, "received", 10)
	s.Add(CountUnpaired, "bio without completion", 0)
	if s.Get(CountLost, "ringbuf (cpu 0)") != 5 || s.Total(CountLost) != 5 {
		t.Errorf("stats: %+v", s)
	}
	if p := s.Problems(); len(p) != 1 || p[0].Value != 5 {
		t.Errorf("problems: %+v", p)
	}
}

func TestDeviceString(t *testing.T) {
	if s := (Device{Major: 8, Minor: 1}).String(); s != "8:1" {
		t.Error(s)
	}
	if s := (Device{Major: 0, IsDisk: true}).String(); s != "disk0" {
		t.Error(s)
	}
}
