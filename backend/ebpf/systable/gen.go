package systable

// numbers.go is generated from golang.org/x/sys/unix's system call
// numbers; run go generate after raising golang.org/x/sys.
//go:generate go run ./internal/gennumbers
