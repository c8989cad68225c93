package ebpf

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend"
)

// Capabilities (linux/capability.h).
const (
	capDACReadSearch = 2
	capSysPtrace     = 19
	capSysAdmin      = 21
	capPerfmon       = 38
	capBPF           = 39
)

// ErrPermission is wrapped by Available and Run when iotrace lacks the
// privileges to load BPF programs.
var ErrPermission = errors.New("permission denied")

func effectiveCaps() (uint64, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, fmt.Errorf("capget: %w", err)
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32, nil
}

// checkPrivileges explains what is missing to load and attach the
// programs and to read other processes' descriptors.
func checkPrivileges() error {
	caps, err := effectiveCaps()
	if err != nil {
		return err
	}
	has := func(c uint) bool { return caps&(1<<c) != 0 }
	if !(has(capSysAdmin) || (has(capBPF) && has(capPerfmon))) {
		return fmt.Errorf("ebpf backend: loading BPF programs needs root, or CAP_BPF and CAP_PERFMON "+
			"(uid %d has capabilities %#x); run with sudo: %w", os.Geteuid(), caps, ErrPermission)
	}
	return nil
}

// checkKernel verifies BTF (CO-RE and tp_btf need it).
func checkKernel() error {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("ebpf backend: the kernel has no BTF (/sys/kernel/btf/vmlinux: %v); "+
			"iotrace needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (5.15 or later): %w", err, backend.ErrNotSupported)
	}
	return nil
}

// tracefsDirs are where cilium/ebpf looks for tracefs.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// ensureTracefs mounts tracefs at /sys/kernel/tracing when no tracefs is
// mounted, and says so through warn.
func ensureTracefs(warn func(string)) error {
	for _, d := range tracefsDirs {
		if _, err := os.Stat(d + "/events"); err == nil {
			return nil
		}
	}
	if err := unix.Mount("nodev", tracefsDirs[0], "tracefs", 0, ""); err != nil {
		return fmt.Errorf("ebpf backend: tracefs is not mounted and mounting it at %s failed: %w "+
			"(mount it with: mount -t tracefs nodev %s)", tracefsDirs[0], err, tracefsDirs[0])
	}
	if warn != nil {
		warn("mounted tracefs at " + tracefsDirs[0] + " (it was not mounted)")
	}
	return nil
}

// Available implements backend.Backend: nil when this kernel and these
// privileges can run the backend.
func (b *Backend) Available() error {
	if err := checkKernel(); err != nil {
		return err
	}
	return checkPrivileges()
}

// bootNanos reads CLOCK_BOOTTIME, the clock of bpf_ktime_get_boot_ns.
func bootNanos() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return uint64(ts.Nano())
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
