//go:build !unix

package cli

// checkCommand leaves the program to the ETW backend, which finds it as
// CreateProcess does (backend/etw/live/program.go), not as
// exec.LookPath does.
func checkCommand(string) error { return nil }
