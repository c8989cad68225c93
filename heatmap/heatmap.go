package heatmap

import (
	"math/bits"
)

// Rows is the number of latency rows: row k holds latencies (ns) in
// [2^(k-1), 2^k-1], row 0 holds 0.
const Rows = 65

// DefaultColumns is the number of time columns of a Map made with 0.
const DefaultColumns = 200

// initialWidth is the first column width in ns (1 ms); it doubles as the
// trace gets longer.
const initialWidth = 1_000_000

// Map counts events per (time column, log2 latency row). The zero value is
// not usable; create one with [New].
type Map struct {
	cols   int
	width  int64 // ns per column
	counts []uint64
	n      uint64
	last   int // highest column used
	minRow int
	maxRow int
}

// New returns an empty Map with the given number of time columns (0 means
// DefaultColumns).
func New(columns int) *Map {
	if columns <= 0 {
		columns = DefaultColumns
	}
	// An even number of columns keeps merging simple.
	columns += columns & 1
	return &Map{cols: columns, width: initialWidth, counts: make([]uint64, columns*Rows), minRow: Rows}
}

// Add counts one event that started at t (ns from the trace start) and took
// latency ns. Times before 0 go to the first column; negative latencies
// count as 0.
func (m *Map) Add(t, latency int64) {
	if t < 0 {
		t = 0
	}
	if latency < 0 {
		latency = 0
	}
	col := t / m.width
	for col >= int64(m.cols) {
		m.grow()
		col = t / m.width
	}
	row := bits.Len64(uint64(latency))
	m.counts[int(col)*Rows+row]++
	m.n++
	if int(col) > m.last {
		m.last = int(col)
	}
	if row < m.minRow {
		m.minRow = row
	}
	if row > m.maxRow {
		m.maxRow = row
	}
}

// grow doubles the column width, merging columns pairwise.
func (m *Map) grow() {
	half := m.cols / 2
	for c := 0; c < half; c++ {
		dst := m.counts[c*Rows : (c+1)*Rows]
		a := m.counts[2*c*Rows : (2*c+1)*Rows]
		b := m.counts[(2*c+1)*Rows : (2*c+2)*Rows]
		for r := 0; r < Rows; r++ {
			dst[r] = a[r] + b[r]
		}
	}
	clear(m.counts[half*Rows:])
	m.width *= 2
	m.last /= 2
}

// Count returns the number of events added.
func (m *Map) Count() uint64 { return m.n }

// ColumnWidth returns the current width of a time column in ns.
func (m *Map) ColumnWidth() int64 { return m.width }

// Columns returns the number of columns in use (up to the last non-empty
// one).
func (m *Map) Columns() int {
	if m.n == 0 {
		return 0
	}
	return m.last + 1
}

// RowRange returns the lowest and highest non-empty latency rows; ok is
// false when the map is empty.
func (m *Map) RowRange() (lo, hi int, ok bool) {
	if m.n == 0 {
		return 0, 0, false
	}
	return m.minRow, m.maxRow, true
}

// Cell returns the count of column col and latency row row.
func (m *Map) Cell(col, row int) uint64 {
	if col < 0 || col >= m.cols || row < 0 || row >= Rows {
		return 0
	}
	return m.counts[col*Rows+row]
}

// RowBounds returns the latency range in ns of row: [lo, hi].
func RowBounds(row int) (lo, hi uint64) {
	if row <= 0 {
		return 0, 0
	}
	lo = 1 << (row - 1)
	if row >= 64 {
		return lo, ^uint64(0)
	}
	return lo, 1<<row - 1
}
