package ebpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/testenv"
)

// The file calls of strace's %file and %desc classes iotrace traces since
// the system-call table became data (docs/linux.md, "Adding a system
// call"): each a row of systable.Table, each checked here live.

// xattrArgs is struct xattr_args (include/uapi/linux/xattr.h).
type xattrArgs struct {
	value uint64
	size  uint32
	flags uint32
}

// fileAttr is struct file_attr (include/uapi/linux/fs.h), version 0.
type fileAttr struct {
	xflags            uint64
	extsize, nextents uint32
	projid, cowextsz  uint32
}

// newCalls names, in order, the calls of workload "newcalls" whose
// result it reports (the return value, or -errno).
var newCalls = []string{
	"name_to_handle_at", "open_by_handle_at", "readahead", "cachestat", "vmsplice", "tee",
	"setxattrat", "getxattrat", "listxattrat", "removexattrat", "file_getattr", "file_setattr",
}

// Workload "newcalls": the calls of newCalls on $WL_DIR/f.txt (fd 71,
// directory fd 70) and two pipes (72/73 and 74/75), then a read through
// the descriptor open_by_handle_at made. It reports each call's result in
// the order of newCalls. Expectations in TestNewFileSyscalls.
func workloadNewCalls() {
	dir := os.Getenv("WL_DIR")
	runtime.LockOSThread()
	f := filepath.Join(dir, "f.txt")
	must(os.WriteFile(f, make([]byte, 8192), 0o644))
	must(unix.Dup2(mustFD(unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)), 70))
	must(unix.Dup2(mustFD(unix.Open(f, unix.O_RDWR, 0)), 71))
	var p [2]int
	must(unix.Pipe(p[:]))
	must(unix.Dup2(p[0], 72))
	must(unix.Dup2(p[1], 73))
	must(unix.Pipe(p[:]))
	must(unix.Dup2(p[0], 74))
	must(unix.Dup2(p[1], 75))
	say("ready")
	waitLine()

	var res []string
	note := func(r uintptr, errno unix.Errno) {
		if errno != 0 {
			res = append(res, fmt.Sprint(-int(errno)))
			return
		}
		res = append(res, fmt.Sprint(int64(r)))
	}
	raw := func(r, _ uintptr, errno unix.Errno) { note(r, errno) }
	errnoOf := func(err error) unix.Errno {
		var n unix.Errno
		if err != nil && !errors.As(err, &n) {
			must(err)
		}
		return n
	}
	handle, _, err := unix.NameToHandleAt(70, "f.txt", 0)
	note(0, errnoOf(err))
	hfd, err := unix.OpenByHandleAt(70, handle, unix.O_RDONLY)
	note(uintptr(hfd), errnoOf(err))
	raw(unix.Syscall(unix.SYS_READAHEAD, 71, 0, 4096))
	var cs unix.Cachestat_t
	note(0, errnoOf(unix.Cachestat(71, &unix.CachestatRange{Off: 0, Len: 8192}, &cs, 0)))
	n, err := unix.Vmsplice(73, []unix.Iovec{{Base: &[]byte("hello")[0], Len: 5}}, 0)
	note(uintptr(n), errnoOf(err))
	n64, err := unix.Tee(72, 75, 5, 0)
	note(uintptr(n64), errnoOf(err))

	name, _ := unix.BytePtrFromString("user.k")
	path, _ := unix.BytePtrFromString("f.txt")
	val := []byte("v")
	set := xattrArgs{value: uint64(uintptr(unsafe.Pointer(&val[0]))), size: 1}
	raw(unix.Syscall6(unix.SYS_SETXATTRAT, 70, uintptr(unsafe.Pointer(path)), 0, uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&set)), unsafe.Sizeof(set)))
	buf := make([]byte, 64)
	get := xattrArgs{value: uint64(uintptr(unsafe.Pointer(&buf[0]))), size: 16}
	raw(unix.Syscall6(unix.SYS_GETXATTRAT, 70, uintptr(unsafe.Pointer(path)), 0, uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&get)), unsafe.Sizeof(get)))
	raw(unix.Syscall6(unix.SYS_LISTXATTRAT, 70, uintptr(unsafe.Pointer(path)), 0, uintptr(unsafe.Pointer(&buf[0])), 64, 0))
	raw(unix.Syscall6(unix.SYS_REMOVEXATTRAT, 70, uintptr(unsafe.Pointer(path)), 0, uintptr(unsafe.Pointer(name)), 0, 0))
	var fa fileAttr
	raw(unix.Syscall6(unix.SYS_FILE_GETATTR, 70, uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&fa)), unsafe.Sizeof(fa), 0, 0))
	raw(unix.Syscall6(unix.SYS_FILE_SETATTR, 70, uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&fa)), unsafe.Sizeof(fa), 0, 0))
	runtime.KeepAlive(val)
	runtime.KeepAlive(buf)
	if hfd >= 0 {
		_, err = unix.Read(hfd, buf[:10])
		must(err)
	}
	say("done " + strings.Join(res, " "))
	waitLine()
}

// TestNewFileSyscalls traces workload "newcalls" and checks each call's
// event: its op, its file, its arguments and its result as the workload
// saw it.
func TestNewFileSyscalls(t *testing.T) {
	testenv.RequirePrivileged(t, "loads BPF programs")
	dir := t.TempDir()
	wpid, sink, line, stop := traceWorkload(t, "newcalls", dir)
	fields := strings.Fields(strings.TrimPrefix(line, "done "))
	if !strings.HasPrefix(line, "done ") || len(fields) != len(newCalls) {
		t.Fatalf("workload: %q", line)
	}
	res := map[string]int64{}
	for i, name := range newCalls {
		v, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			t.Fatalf("workload: %q: %v", line, err)
		}
		res[name] = v
	}
	time.Sleep(50 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	evs, w, f := sink.events, byPid(wpid), filepath.Join(dir, "f.txt")
	pipe := func(fd int32) string { // the name of a pipe end, from its earlier write or read
		for _, e := range find(evs, w, byFD(fd)) {
			if strings.HasPrefix(e.Path, "pipe:[") {
				return e.Path
			}
		}
		return "pipe (not named)"
	}
	// result checks an event's status and result against the workload's.
	result := func(t *testing.T, e event.Event, name string, bytes bool) {
		t.Helper()
		r := res[name]
		switch {
		case r < 0 && (e.Status == event.StatusOK || e.Code != uint32(-r)):
			t.Errorf("%s: status %v code %d, the workload saw errno %d", name, e.Status, e.Code, -r)
		case r >= 0 && e.Status != event.StatusOK:
			t.Errorf("%s: status %v code %d, the workload saw success (%d)", name, e.Status, e.Code, r)
		case r >= 0 && bytes && e.Bytes != r:
			t.Errorf("%s: bytes %d, the workload saw %d", name, e.Bytes, r)
		}
	}
	for _, tc := range []struct {
		name  string
		bytes bool // the result is a byte count
		check func(e event.Event) bool
	}{
		{"name_to_handle_at", false, func(e event.Event) bool { return e.Op == event.OpStat && e.Path == f && e.Info == 0 }},
		{"open_by_handle_at", false, func(e event.Event) bool {
			// Named from /proc: the call gives no path.
			return e.Op == event.OpOpen && e.Info == 70 && e.FD == int32(res["open_by_handle_at"]) &&
				e.Path == f && e.Flags&event.FlagPathLate != 0 && e.Inode != 0
		}},
		{"readahead", false, func(e event.Event) bool {
			return e.Op == event.OpAdvise && e.FD == 71 && e.Path == f && e.Offset == 0 && e.Size == 4096
		}},
		{"cachestat", false, func(e event.Event) bool { return e.Op == event.OpStat && e.FD == 71 && e.Path == f }},
		{"vmsplice", true, func(e event.Event) bool {
			return e.Op == event.OpCopy && e.FD == 73 && e.Path == pipe(72) && e.Size == 5
		}},
		{"tee", true, func(e event.Event) bool {
			return e.Op == event.OpCopy && e.FD == 72 && e.Info == 75 && e.Size == 5 &&
				strings.HasPrefix(e.Path, "pipe:[") && strings.HasPrefix(e.Path2, "pipe:[") && e.Path != e.Path2
		}},
		{"setxattrat", false, func(e event.Event) bool { return e.Op == event.OpXattr && e.Path == f && e.Note == "user.k" }},
		{"getxattrat", true, func(e event.Event) bool { return e.Op == event.OpXattr && e.Path == f && e.Note == "user.k" }},
		{"listxattrat", true, func(e event.Event) bool { return e.Op == event.OpXattr && e.Path == f && e.Size == 64 }},
		{"removexattrat", false, func(e event.Event) bool { return e.Op == event.OpXattr && e.Path == f && e.Note == "user.k" }},
		{"file_getattr", false, func(e event.Event) bool { return e.Op == event.OpStat && e.Path == f }},
		{"file_setattr", false, func(e event.Event) bool { return e.Op == event.OpSetAttr && e.Path == f }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := one(t, tc.name, evs, w, byNative(tc.name))
			if !tc.check(e) {
				t.Errorf("%s: %+v", tc.name, e)
			}
			result(t, e, tc.name, tc.bytes)
		})
	}
	if hfd := int32(res["open_by_handle_at"]); hfd >= 0 {
		e := one(t, "read by handle", evs, w, byNative("read"), byFD(hfd))
		if e.Path != f || e.Bytes != 10 {
			t.Errorf("read through open_by_handle_at's descriptor: %q bytes %d", e.Path, e.Bytes)
		}
	}
	checkResolved(t, sink)
}
