package blockio

import (
	"strconv"

	"github.com/iotrace/iotrace/event"
)

// Kernel counter indexes (enum blk_counter in bpf/blockio.h).
const (
	cLost = iota
	cQueued
	cFiltered
	cMapFull
	cSplit
	cSplitOrphan
	cRemap
	cIssue
	cRequeue
	cRqNoBio
	cNoStart
	cChainLong
	cCompleted
	cDirtyFull
	cUnseen
	cStale
	cPartial
	cFillOnly
	cPCLost
	cFillUnseen
	cRqFull
	numCounters
)

// Stats counter names. The Lost, Unpaired and Dropped ones are shown to
// the user whenever they are not 0.
const (
	StatLost        = "block events lost: ring buffer full"
	StatQueued      = "block bios queued"
	StatFiltered    = "block bios not traced (pid filter)"
	StatMapFull     = "block bios not tracked: in-flight map full"
	StatSplit       = "block bios split (children tracked)"
	StatSplitOrphan = "block split children of untracked bios"
	StatMerge       = "block bios merged into a request"
	StatRemap       = "block bios remapped (partition, device-mapper)"
	StatIssue       = "block requests issued"
	StatRequeue     = "block requests requeued"
	StatRqNoBio     = "block requests without bios (flush)"
	StatNoStart     = "block completions without queue (queued before the trace)"
	StatNoStartFilt = "block completions of untracked bios (filtered out or queued before the trace)"
	StatChainLong   = "block requests with a bio chain beyond the walk bound"
	StatCompleted   = "block events"
	StatDirtyFull   = "block dirtied inodes not remembered"
	// StatRqFull counts requests issued while the map of requests in
	// flight was full: their bios' events lack the issue time (split
	// between queue and device).
	StatRqFull   = "block requests whose issue time was not kept: map full"
	StatInFlight = "block bios without completion (in flight at stop)"
	// StatUnseen counts tracked bios whose completion never reached the
	// programs (the kernel did not run block_rq_complete's program for
	// it, as seen while another BPF tool attached to the block
	// tracepoints); each is reported, as an event without completion,
	// when its address is reused (queued, split off or completed again).
	StatUnseen  = "block completions not seen (events without completion)"
	StatPartial = "block partial completions (the rest of the bio awaited)"
	// StatStale counts completions that found another bio's entry at
	// their address (that bio's completion unseen, this one's queue
	// filtered out or unseen): the entry is reported under StatUnseen,
	// the completion as untracked.
	StatStale     = "block completions at the address of another tracked bio"
	StatMalformed = "block records malformed"
	// StatFillOnly counts page-cache reads of processes the pid filter
	// leaves out, tracked (no block event) only so that the provenance of
	// a traced process's read of the same pages is known: it may wait for
	// them, or find them cached.
	StatFillOnly = "page-cache reads of untraced processes tracked for read provenance (no block event)"
	// StatPCLost counts page-cache provenance records (a fill queued or
	// done) lost to a full syscall ring buffer: reads of those pages may
	// be misclassified.
	StatPCLost = "page-cache fill records lost: ring buffer full (reads of those pages may be misclassified)"
	// StatFillUnseen counts completions of such untraced page-cache reads
	// that never reached the programs (see StatUnseen).
	StatFillUnseen = "page-cache reads of untraced processes whose completion was not seen"
	// StatMissed prefixes a tracepoint name: runs of its program the
	// kernel skipped because the program was already running on that CPU
	// (a completion interrupting another completion). A skipped
	// block_rq_complete leaves its bios in flight until stop.
	StatMissed = "block tracepoint runs skipped by the kernel (nested on one CPU): "
)

// Prefixes of the counters that time the tracer's own phases of start-up
// (Load and Attach) and stop (the end of Run), in µs, under the trace's
// "startup µs: " and "stop µs: " counters, so that a slow phase shows.
const (
	StartupPrefix = "startup µs: block tracer: "
	StopPrefix    = "stop µs: block tracer: "
)

// counterStats turns per-CPU kernel counter values (perCPU[cpu][index])
// into Stats. filtered says whether the pid filter was on, which turns
// completions of unknown bios from a pairing problem into the expected
// result of filtering.
func counterStats(perCPU [][numCounters]uint64, filtered bool) event.Stats {
	var s event.Stats
	var sum [numCounters]uint64
	for cpu, v := range perCPU {
		for i := range v {
			sum[i] += v[i]
		}
		if v[cLost] != 0 {
			s.Add(event.CountLost, StatLost+" (cpu "+strconv.Itoa(cpu)+")", v[cLost])
		}
	}
	s.Add(event.CountInfo, StatCompleted, sum[cCompleted])
	s.Add(event.CountInfo, StatQueued, sum[cQueued])
	s.Add(event.CountInfo, StatSplit, sum[cSplit])
	s.Add(event.CountInfo, StatRemap, sum[cRemap])
	s.Add(event.CountInfo, StatIssue, sum[cIssue])
	s.Add(event.CountInfo, StatRequeue, sum[cRequeue])
	s.Add(event.CountInfo, StatRqNoBio, sum[cRqNoBio])
	s.Add(event.CountLost, StatMapFull, sum[cMapFull])
	s.Add(event.CountLost, StatUnseen, sum[cUnseen])
	s.Add(event.CountLost, StatRqFull, sum[cRqFull])
	s.Add(event.CountInfo, StatPartial, sum[cPartial])
	s.Add(event.CountInfo, StatStale, sum[cStale])
	s.Add(event.CountUnpaired, StatChainLong, sum[cChainLong])
	if sum[cFillOnly] != 0 {
		s.Add(event.CountInfo, StatFillOnly, sum[cFillOnly])
	}
	s.Add(event.CountLost, StatPCLost, sum[cPCLost])
	if sum[cFillUnseen] != 0 {
		s.Add(event.CountUnpaired, StatFillUnseen, sum[cFillUnseen])
	}
	if filtered {
		s.Add(event.CountInfo, StatFiltered, sum[cFiltered])
		s.Add(event.CountInfo, StatNoStartFilt, sum[cNoStart])
		s.Add(event.CountInfo, StatSplitOrphan, sum[cSplitOrphan])
		s.Add(event.CountInfo, StatDirtyFull, sum[cDirtyFull])
	} else {
		s.Add(event.CountUnpaired, StatNoStart, sum[cNoStart])
		s.Add(event.CountUnpaired, StatSplitOrphan, sum[cSplitOrphan])
	}
	return s
}
