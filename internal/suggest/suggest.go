// Package suggest finds, for a name that is not one of a known set (an
// op, a layer, a field), the known name it most likely meant, so that
// every place that parses such names says "did you mean" the same way.
// Hand-written: a dozen lines of edit distance are smaller than a
// dependency.
package suggest

import "fmt"

// Nearest returns the name among names closest to name by edit distance
// (insertions, deletions, substitutions; case counts), when it is near
// enough to be a typing slip: at most 2 edits, and fewer than the length
// of the shorter of the two. ok is false when none is.
func Nearest(name string, names []string) (best string, ok bool) {
	bestD := 3
	for _, n := range names {
		if d := distance(name, n); d < bestD && d < min(len(name), len(n)) {
			best, bestD, ok = n, d, true
		}
	}
	return best, ok
}

// Hint returns ` (did you mean "x"?)` for the name nearest to name, or ""
// when none is near.
func Hint(name string, names []string) string {
	if best, ok := Nearest(name, names); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// distance is the Levenshtein distance between a and b, by bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
