// Package heatmap accumulates latency over time in bounded memory and
// draws it as a standalone SVG latency heatmap: time on the x axis,
// latency on a log2 y axis, colour by the number of operations in each
// cell.
//
// A [Map] has a fixed number of time columns; when an event falls beyond
// the last column, the column width doubles and neighbouring columns
// merge, so a Map never grows with the length of the trace.
package heatmap
