package systable

// Untraced lists the file and descriptor system calls strace shows (its
// %file and %desc classes) that iotrace does not trace, with the reason
// (docs/linux.md has the same list). TestStraceCompare (backend/ebpf)
// checks that every call strace reports on its workloads is traced or
// listed here.
var Untraced = map[string]string{
	"getcwd":            "reads the working directory's name, no file I/O; iotrace keeps the cwd from chdir/fchdir and the /proc rundown",
	"statfs":            "file-system statistics, not a file's",
	"fstatfs":           "file-system statistics, not a file's",
	"poll":              "waits for readiness; the I/O itself is traced",
	"ppoll":             "waits for readiness; the I/O itself is traced",
	"select":            "waits for readiness; the I/O itself is traced",
	"pselect6":          "waits for readiness; the I/O itself is traced",
	"epoll_create1":     "event-polling descriptor: waits, no I/O",
	"epoll_ctl":         "event-polling registration: no I/O",
	"epoll_wait":        "waits for readiness; the I/O itself is traced",
	"epoll_pwait":       "waits for readiness; the I/O itself is traced",
	"inotify_init1":     "change notification on Linux is not traced",
	"inotify_add_watch": "change notification on Linux is not traced",
	"fanotify_init":     "change notification on Linux is not traced",
	"timerfd_create":    "timer descriptor: no file I/O",
	"signalfd4":         "signal descriptor: no file I/O",
	"pidfd_open":        "process descriptor: no file I/O",
	"memfd_secret":      "anonymous secret memory: no file",
}
