package report

// Options configure a Report.
type Options struct {
	// TopN is the number of processes, files, errors and slow operations
	// shown; 10 when 0.
	TopN int
	// Capacity bounds the number of processes, files and error groups
	// tracked at once; 1024 when 0. When a table reaches twice its
	// capacity it is pruned to the Capacity/2 entries with the most bytes
	// plus the Capacity/2 with the most time; what is pruned is folded
	// into an "(other)" entry and the largest pruned bytes and time become
	// the error bound of any key that comes back later: its totals are
	// then lower bounds, off by at most that much, and are marked so.
	Capacity int
	// Heatmap collects the latency-over-time maps drawn by
	// Report.WriteHeatmap (block layer and per op).
	Heatmap bool
	// PathKey, when set, maps every path before it is used as a file key
	// (compare uses it to line up paths across machines). It is called
	// once per distinct run of equal paths.
	PathKey func(path string) string
	// ExcludePaging leaves out file-layer events with FlagPaging (Windows
	// cache-manager and page-fault I/O, which have no Linux system call
	// counterpart); they are counted in Result.Excluded.
	ExcludePaging bool
}

func (o Options) normalized() Options {
	if o.TopN <= 0 {
		o.TopN = 10
	}
	if o.Capacity <= 0 {
		o.Capacity = 1024
	}
	if o.Capacity < 2*o.TopN {
		o.Capacity = 2 * o.TopN
	}
	return o
}
