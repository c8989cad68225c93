package rawbtf

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// VmlinuxPath is where Linux publishes its BTF.
const VmlinuxPath = "/sys/kernel/btf/vmlinux"

// ReadKernel maps the kernel's raw BTF read-only (5 MB that sysfs would
// otherwise copy out a page per read(2): tens of ms of start-up); it
// reads the file when mapping fails. release unmaps it.
func ReadKernel() (raw []byte, release func(), err error) {
	f, err := os.Open(VmlinuxPath)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() > 0 && st.Size() < 1<<30 {
		if m, merr := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE); merr == nil {
			return m, func() { _ = unix.Munmap(m) }, nil
		}
	}
	raw, err = io.ReadAll(f)
	return raw, func() {}, err
}

// Kernel parses the kernel's BTF (ReadKernel); release unmaps it, after
// which the Spec must not be used.
func Kernel() (s *Spec, release func(), err error) {
	raw, release, err := ReadKernel()
	if err != nil {
		return nil, nil, fmt.Errorf("kernel BTF: %w", err)
	}
	if s, err = Parse(raw); err != nil {
		release()
		return nil, nil, fmt.Errorf("kernel BTF %s: %w", VmlinuxPath, err)
	}
	return s, release, nil
}
