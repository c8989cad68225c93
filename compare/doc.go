// Package compare lines up two traces of the same workload — possibly from
// two operating systems, a Linux .iot against a Windows .etl — and shows
// them side by side per normalized op and per file: counts, bytes,
// latency percentiles, disk I/Os per file-system op and cache-hit ratio,
// with a B/A ratio column and the largest differences (by time) first.
//
// Each trace is summarised in one streaming pass by package report; paths
// are normalized before they are used as keys (see [Options]) so that
// C:\Users\me\proj\a.c and /home/me/proj/a.c can meet.
package compare
