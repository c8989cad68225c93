//go:build linux && (amd64 || arm64)

package ptrace

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The helper: the tracer starts iotrace itself again with argv[0]
// childArg0 and the pipe's descriptor in childEnv; the helper reads the
// seccomp program from the pipe once the tracer has seized it, installs
// it and executes the command (argv[1] the program's path, argv[2:] its
// arguments). It must run on the process's main thread (the one the
// tracer seized, whose pid the command keeps): package initialization
// runs there, so init does it, before main, in any binary that links
// this package.
const (
	childArg0 = "iotrace-ptrace-helper"
	childEnv  = "IOTRACE_PTRACE_HELPER_FD"
)

func init() {
	if len(os.Args) < 2 || os.Args[0] != childArg0 || os.Getenv(childEnv) == "" {
		return
	}
	err := child(os.Args[1], os.Args[2:])
	fmt.Fprintf(os.Stderr, "iotrace: ptrace: %v\n", err)
	os.Exit(127)
}

// child installs the seccomp program the tracer sends and executes path;
// it returns only on failure.
func child(path string, argv []string) error {
	fd, err := strconv.Atoi(os.Getenv(childEnv))
	if err != nil {
		return fmt.Errorf("helper: %s=%q", childEnv, os.Getenv(childEnv))
	}
	os.Unsetenv(childEnv)
	pipe := os.NewFile(uintptr(fd), "tracer pipe")
	var n uint32
	if err := binary.Read(pipe, binary.LittleEndian, &n); err != nil {
		return fmt.Errorf("helper: the tracer sent no filter: %w", err)
	}
	if n == 0 || n > 4096 {
		return fmt.Errorf("helper: a filter of %d instructions", n)
	}
	raw := make([]byte, 8*n)
	if _, err := io.ReadFull(pipe, raw); err != nil {
		return fmt.Errorf("helper: the filter: %w", err)
	}
	pipe.Close()
	prog := make([]unix.SockFilter, n)
	for i := range prog {
		b := raw[8*i:]
		prog[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:])}
	}
	// An unprivileged process may install a filter only with
	// no_new_privs: a set-user-ID program then runs without its
	// privileges (it would under ptrace anyway).
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("helper: PR_SET_NO_NEW_PRIVS: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(n), Filter: &prog[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("helper: installing the seccomp filter: %w", e)
	}
	err = syscall.Exec(path, argv, os.Environ())
	return fmt.Errorf("exec %s: %w", path, err)
}

// encodeFilter is what the tracer writes into the pipe: the count, then
// the instructions as struct sock_filter.
func encodeFilter(prog []Instruction) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(prog)))
	for _, in := range prog {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}
