package ebpf

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/backend/ebpf/procfs"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// anonCalls are the calls of workload "anonfd", in order: each makes a
// descriptor with no path, which /proc/PID/fd shows as "anon_inode:…".
var anonCalls = []string{
	"timerfd_create", "signalfd4", "epoll_create1", "inotify_init1",
	"pidfd_open", "userfaultfd", "perf_event_open", "fanotify_init",
}

// uffdUserModeOnly is UFFD_USER_MODE_ONLY (include/uapi/linux/userfaultfd.h).
const uffdUserModeOnly = 1

// Workload "anonfd": each call of anonCalls, the name /proc/self/fd shows
// for its descriptor, and an 8-byte read of it (which may fail: the
// descriptor's name is what counts); then signalfd4 on the signalfd made,
// which changes it. It reports "CALL FD NAME FLAGS" per call, FLAGS in
// octal as /proc/self/fdinfo shows them (FD -errno, NAME "-" and FLAGS 0
// when the call failed: a container may refuse fanotify).
// Expectations in TestAnonDescriptors.
func workloadAnonFDs() {
	runtime.LockOSThread()
	say("ready")
	waitLine()
	var mask unix.Sigset_t
	mask.Val[0] = 1 << (unix.SIGUSR1 - 1)
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_TASK_CLOCK, Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{}))}
	makers := []func() (int, error){
		func() (int, error) {
			return unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
		},
		func() (int, error) { return unix.Signalfd(-1, &mask, unix.SFD_CLOEXEC|unix.SFD_NONBLOCK) },
		func() (int, error) { return unix.EpollCreate1(unix.EPOLL_CLOEXEC) },
		func() (int, error) { return unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK) },
		func() (int, error) { return unix.PidfdOpen(os.Getpid(), 0) },
		func() (int, error) {
			r, _, e := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|unix.O_NONBLOCK|uffdUserModeOnly, 0, 0)
			if e != 0 {
				return -1, e
			}
			return int(r), nil
		},
		func() (int, error) { return unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC) },
		func() (int, error) {
			return unix.FanotifyInit(unix.FAN_CLOEXEC|unix.FAN_CLASS_NOTIF|unix.FAN_NONBLOCK, unix.O_RDONLY)
		},
	}
	var made, res []string
	var fds []int
	buf := make([]byte, 8)
	sfd := -1
	for i, mk := range makers {
		fd, err := mk()
		if err != nil {
			errno, _ := err.(unix.Errno)
			made = append(made, fmt.Sprintf("%s %d -", anonCalls[i], -int(errno)))
			fds = append(fds, -1)
			continue
		}
		name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		must(err)
		made = append(made, fmt.Sprintf("%s %d %s", anonCalls[i], fd, name))
		fds = append(fds, fd)
		_, _ = unix.Read(fd, buf)
		if anonCalls[i] == "signalfd4" {
			sfd = fd
		}
	}
	// Their flags, once all are made: a descriptor of fdinfo opened
	// between two calls would take the number of the next one.
	for i, fd := range fds {
		if fd < 0 {
			res = append(res, made[i]+" 0")
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
		must(err)
		flags, ok := procfs.FDInfoFlags(info)
		if !ok {
			must(fmt.Errorf("no flags in fdinfo: %q", info))
		}
		res = append(res, fmt.Sprintf("%s %o", made[i], flags))
	}
	if sfd >= 0 {
		mask.Val[0] |= 1 << (unix.SIGUSR2 - 1)
		_, err := unix.Signalfd(sfd, &mask, 0)
		must(err)
	}
	say("done " + strings.Join(res, " "))
	waitLine()
}

// TestAnonDescriptors: each call that makes a descriptor with no path
// (anonCalls) is traced and names the descriptor as /proc/PID/fd does, so
// that its reads are named from the call, not later from /proc (which
// cannot name them once the process is gone); signalfd4 on an existing
// signalfd is that descriptor's event, not a new one.
func TestAnonDescriptors(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	wpid, sink, line, stop := traceWorkload(t, "anonfd", t.TempDir())
	fields := strings.Fields(strings.TrimPrefix(line, "done "))
	if !strings.HasPrefix(line, "done ") || len(fields) != 4*len(anonCalls) {
		t.Fatalf("workload: %q", line)
	}
	time.Sleep(50 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	evs, w := sink.events, byPid(wpid)
	for i := 0; i < len(fields); i += 4 {
		call, name := fields[i], fields[i+2]
		fd, err := strconv.Atoi(fields[i+1])
		flags, err2 := strconv.ParseUint(fields[i+3], 8, 32)
		if err != nil || err2 != nil {
			t.Fatalf("workload: %q: %v %v", line, err, err2)
		}
		t.Run(call, func(t *testing.T) {
			// The workload's own call: the Go runtime may make one
			// too (its poller's epoll_create1), with another result.
			made := find(evs, w, byNative(call))
			if fd < 0 {
				failed := find(made, func(e *event.Event) bool { return e.Status != event.StatusOK })
				if len(failed) == 0 || failed[0].Code != uint32(-fd) {
					t.Errorf("%s: %+v, the workload saw errno %d", call, failed, -fd)
				}
				return
			}
			made = find(made, byFD(int32(fd)))
			if len(made) == 0 {
				t.Fatalf("no %s event with fd %d", call, fd)
			}
			e := made[0]
			if e.Op != event.OpOpen || e.FD != int32(fd) || e.Path != name || e.Status != event.StatusOK {
				t.Errorf("%s: %v fd %d %q %v, want open fd %d %q", call, e.Op, e.FD, e.Path, e.Status, fd, name)
			}
			if e.OpenFlags != uint32(flags) {
				t.Errorf("%s: open flags %#o, /proc/self/fdinfo says %#o", call, e.OpenFlags, flags)
			}
			r := one(t, call+" read", evs, w, byNative("read"), byFD(int32(fd)))
			if r.Path != name || r.Flags&event.FlagPathLate != 0 {
				t.Errorf("read of %s's descriptor: %q (flags %v), want %q from the call", call, r.Path, r.Flags, name)
			}
			if call == "signalfd4" {
				if len(made) != 2 {
					t.Fatalf("%d signalfd4 events, want 2", len(made))
				}
				if c := made[1]; c.FD != int32(fd) || c.Path != name || c.Status != event.StatusOK {
					t.Errorf("signalfd4 on fd %d: fd %d %q %v, want the same descriptor %q", fd, c.FD, c.Path, c.Status, name)
				}
			}
		})
	}
	checkResolved(t, sink)
}
