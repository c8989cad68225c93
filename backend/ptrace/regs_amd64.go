//go:build linux

package ptrace

import "golang.org/x/sys/unix"

// frameRegs returns the program counter and frame pointer (rbp) of the
// stopped thread tid.
func frameRegs(tid int) (pc, fp uint64, err error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return 0, 0, err
	}
	return r.Rip, r.Rbp, nil
}
