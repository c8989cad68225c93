// Package scripttest builds the small, hand-made Linux trace with known
// answers that the script tests and the run command's tests play through
// the example scripts.
package scripttest
