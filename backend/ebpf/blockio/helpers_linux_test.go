package blockio

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// bootNow returns CLOCK_BOOTTIME in ns, the tracer's default clock.
func bootNow(t testing.TB) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatalf("clock_gettime: %v", err)
	}
	return ts.Nano()
}

// run is a tracer running in the background, collecting events.
type run struct {
	t      *Tracer
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	events []event.Event
	facts  []event.Fact
}

func startTracer(t *testing.T, opts Options) *run {
	t.Helper()
	testenv.RequirePrivileged(t, "loads eBPF programs on block tracepoints")
	if opts.Origin == 0 {
		opts.Origin = bootNow(t)
	}
	r := &run{done: make(chan error, 1)}
	opts.Warn = func(msg string) { t.Logf("warn: %s", msg) }
	opts.Fact = func(f *event.Fact) {
		r.mu.Lock()
		r.facts = append(r.facts, *f)
		r.mu.Unlock()
	}
	tr, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	r.t = tr
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.done <- tr.Run(ctx, func(e *event.Event) {
			r.mu.Lock()
			r.events = append(r.events, *e)
			r.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		tr.Close()
	})
	return r
}

// stop ends the run and returns the events it collected.
func (r *run) stop(t *testing.T) []event.Event {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30 s after its context was cancelled")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events
}

// onDev keeps the events on dev.
func onDev(evs []event.Event, dev event.Device) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Dev == dev {
			out = append(out, e)
		}
	}
	return out
}

// loopDev is a loop device backed by a file in a temporary directory,
// optionally with a fresh ext4 file system mounted on it.
type loopDev struct {
	path  string // /dev/loopN
	name  string // loopN
	dev   event.Device
	mount string // mount point, "" when not mounted
}

func newLoop(t *testing.T, size int64, withFS bool) *loopDev {
	t.Helper()
	testenv.RequirePrivileged(t, "creates a loop device")
	dir := t.TempDir()
	backing := filepath.Join(dir, "backing.img")
	f, err := os.Create(backing)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command("losetup", "--find", "--show", backing).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup (util-linux, see scripts/setup): %v: %s", err, out)
	}
	l := &loopDev{path: strings.TrimSpace(string(out))}
	l.name = filepath.Base(l.path)
	t.Cleanup(func() {
		if l.mount != "" {
			if out, err := exec.Command("umount", l.mount).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v: %s", l.mount, err, out)
			}
		}
		if out, err := exec.Command("losetup", "-d", l.path).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", l.path, err, out)
		}
	})
	var st unix.Stat_t
	if err := unix.Stat(l.path, &st); err != nil {
		t.Fatal(err)
	}
	l.dev = event.Device{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)}
	if withFS {
		// No lazy init: no background writes while the test measures.
		out, err := exec.Command("mkfs.ext4", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", l.path).CombinedOutput()
		if err != nil {
			t.Fatalf("mkfs.ext4 (e2fsprogs, see scripts/setup): %v: %s", err, out)
		}
		mnt := filepath.Join(dir, "mnt")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "ext4", l.path, mnt).CombinedOutput(); err != nil {
			t.Fatalf("mount %s: %v: %s", l.path, err, out)
		}
		l.mount = mnt
	}
	return l
}

// sysfsStat returns the sectors read and written per /sys/block/NAME/stat.
func (l *loopDev) sysfsStat(t *testing.T) (rd, wr uint64) {
	t.Helper()
	b, err := os.ReadFile("/sys/block/" + l.name + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 7 {
		t.Fatalf("/sys/block/%s/stat: %q", l.name, b)
	}
	rd, _ = strconv.ParseUint(f[2], 10, 64)
	wr, _ = strconv.ParseUint(f[6], 10, 64)
	return rd, wr
}

func (l *loopDev) setQueue(t *testing.T, attr, val string) {
	t.Helper()
	p := "/sys/block/" + l.name + "/queue/" + attr
	if err := os.WriteFile(p, []byte(val), 0); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
}

// physical returns the byte offset on its device of byte off of file fd
// (FS_IOC_FIEMAP), and how many of the size bytes from there are
// contiguous.
func physical(t *testing.T, fd int, off, size int64) (phys, length int64) {
	t.Helper()
	type extent struct {
		Logical, Physical, Length uint64
		_                         [2]uint64
		Flags                     uint32
		_                         [3]uint32
	}
	var buf struct {
		Start, Length                        uint64
		Flags, MappedExtents, ExtentCount, _ uint32
		Extents                              [1]extent
	}
	buf.Start = uint64(off)
	buf.Length = uint64(size)
	buf.Flags = 1 // FIEMAP_FLAG_SYNC
	buf.ExtentCount = 1
	const fsIocFiemap = 0xC020660B
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fsIocFiemap, uintptr(unsafe.Pointer(&buf))); e != 0 {
		t.Fatalf("FIEMAP at %d: %v", off, e)
	}
	if buf.MappedExtents != 1 {
		t.Fatalf("FIEMAP at %d: %d extents", off, buf.MappedExtents)
	}
	x := buf.Extents[0]
	d := uint64(off) - x.Logical
	return int64(x.Physical + d), int64(x.Length - d)
}

// alignedBuf returns n bytes aligned for O_DIRECT.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	a := int(uintptr(unsafe.Pointer(&b[0])) & 4095)
	if a != 0 {
		a = 4096 - a
	}
	return b[a : a+n]
}

// causeMap lets a test mark its own thread as "inside syscall id", as the
// syscall side does at sys_enter, and read back what the block side added.
// cur_syscall is task-local storage: user space names the thread by a
// pidfd (PIDFD_THREAD, Linux 6.9).
type causeMap struct{ t *Tracer }

func (c causeMap) pidfd(tb testing.TB, tid uint32) int {
	tb.Helper()
	fd, err := unix.PidfdOpen(int(tid), unix.PIDFD_THREAD)
	if err != nil {
		tb.Fatalf("pidfd_open(%d, PIDFD_THREAD): %v", tid, err)
	}
	return fd
}

func (c causeMap) enter(tb testing.TB, tid uint32, id uint64) {
	tb.Helper()
	fd := c.pidfd(tb, tid)
	defer unix.Close(fd)
	if err := c.t.objs.CurSyscall.Put(uint32(fd), blockioSyscallState{Cause: blockioSyscallCause{Id: id}}); err != nil {
		tb.Fatalf("cur_syscall put: %v", err)
	}
}

func (c causeMap) exit(tb testing.TB, tid uint32) blockioSyscallCause {
	tb.Helper()
	fd := c.pidfd(tb, tid)
	defer unix.Close(fd)
	var v blockioSyscallState
	if err := c.t.objs.CurSyscall.Lookup(uint32(fd), &v); err != nil {
		tb.Fatalf("cur_syscall lookup: %v", err)
	}
	if err := c.t.objs.CurSyscall.Delete(uint32(fd)); err != nil {
		tb.Fatalf("cur_syscall delete: %v", err)
	}
	return v.Cause
}

func describe(e *event.Event) string {
	return fmt.Sprintf("%s %s dev=%s sector=%d size=%d pid=%d tid=%d comm=%q cause=%#x wait=%d dur=%d flags=%s note=%q",
		e.Op, e.Native, e.Dev, e.Sector, e.Size, e.Pid, e.Tid, e.Comm, e.Cause, e.Wait, e.Duration, e.Flags, e.Note)
}
