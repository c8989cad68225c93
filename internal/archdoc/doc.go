// Package archdoc holds the check that docs/architecture.md names every
// package of the module (TestEveryPackageMapped), so that the map of the
// code stays a map of all of it.
package archdoc
