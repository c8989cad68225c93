package live

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SessionPrefix starts the name of every session iotrace creates:
// "iotrace-<pid>", "iotrace-<pid>-rundown" and "iotrace-<pid>-images".
const SessionPrefix = "iotrace-"

// SessionName returns the name of the main session of process pid.
func SessionName(pid uint32) string { return SessionPrefix + strconv.FormatUint(uint64(pid), 10) }

// RundownName returns the name of the rundown session of process pid.
func RundownName(pid uint32) string { return SessionName(pid) + rundownSuffix }

// ImagesName returns the name of the image-load session that accompanies
// a recording of process pid (record -o t.etl --stacks).
func ImagesName(pid uint32) string { return SessionName(pid) + imagesSuffix }

// Suffixes of the helper sessions' names.
const (
	rundownSuffix = "-rundown"
	imagesSuffix  = "-images"
)

// helperSession reports whether name is one of iotrace's helper sessions
// (rundown, images), which take no markers.
func helperSession(name string) bool {
	return strings.HasSuffix(name, rundownSuffix) || strings.HasSuffix(name, imagesSuffix)
}

// OwnerPid returns the pid in an iotrace session name, and whether name
// is one.
func OwnerPid(name string) (uint32, bool) {
	s, ok := strings.CutPrefix(name, SessionPrefix)
	if !ok {
		return 0, false
	}
	if t, ok := strings.CutSuffix(s, rundownSuffix); ok {
		s = t
	} else {
		s = strings.TrimSuffix(s, imagesSuffix)
	}
	pid, err := strconv.ParseUint(s, 10, 32)
	if err != nil || s == "" || s[0] == '+' {
		return 0, false
	}
	return uint32(pid), true
}

// isIotraceImage reports whether a process image name is iotrace's.
func isIotraceImage(name string) bool {
	n := strings.ToLower(name)
	if i := strings.LastIndexAny(n, `\/`); i >= 0 {
		n = n[i+1:]
	}
	return n == "iotrace.exe" || n == "iotrace"
}

// Stale reports whether session name is an iotrace session whose owner
// process is gone (no such pid, or the pid now runs another program), so
// that it may be stopped. A session that is not iotrace's is never stale.
func Stale(name string, procs []Process, self uint32) bool {
	pid, ok := OwnerPid(name)
	if !ok {
		return false
	}
	if pid == self {
		return true // we are starting: an old session of our pid is left over
	}
	for _, p := range procs {
		if p.Pid == pid {
			return !isIotraceImage(p.Name)
		}
	}
	return true
}

// ErrNotOurs is wrapped by StopStale when asked to stop a session that is
// not a stale iotrace session.
var ErrNotOurs = errors.New("not a stale iotrace session")

// StopStale stops session name if it is a stale iotrace session.
func StopStale(api API, name string) (SessionStatus, error) {
	procs, err := api.Processes()
	if err != nil {
		return SessionStatus{}, fmt.Errorf("list processes: %w", err)
	}
	if !Stale(name, procs, api.Pid()) || ownSession(name, api.Pid()) {
		pid, ours := OwnerPid(name)
		if !ours {
			return SessionStatus{}, fmt.Errorf("session %q: %w: iotrace stops only its own sessions (iotrace-<pid>); stop others with the tool that started them (logman stop %q -ets)", name, ErrNotOurs, name)
		}
		return SessionStatus{}, fmt.Errorf("session %q: %w: its owner, process %d, is still running iotrace (stop it with Ctrl-C there)", name, ErrNotOurs, pid)
	}
	st, err := api.ControlTrace(0, name, ControlStop)
	if err != nil {
		return st, fmt.Errorf("stop session %q: %w", name, err)
	}
	return st, nil
}

// ownSession reports whether name is one of the sessions of process pid.
func ownSession(name string, pid uint32) bool {
	return name == SessionName(pid) || name == RundownName(pid) || name == ImagesName(pid)
}

// startSession starts cfg, handling what goes wrong the way the user
// needs: a leftover session of our own name (from a crashed iotrace with
// our pid) is stopped and the start retried once; a name taken by another
// tool is never touched.
func startSession(api API, cfg *SessionConfig, warn func(string)) (SessionHandle, error) {
	h, err := api.StartTrace(cfg)
	if err == nil {
		return h, nil
	}
	switch {
	case isErrno(err, ErrAlreadyExists):
		if cfg.Name == KernelLoggerName {
			return 0, fmt.Errorf("start ETW session %q: %w: another tool (xperf, WPR, Process Monitor, PerfView...) is using the NT Kernel Logger; stop it there, or with `xperf -stop` / `logman stop \"NT Kernel Logger\" -ets` if it was left behind", cfg.Name, err)
		}
		procs, perr := api.Processes()
		if perr != nil || !Stale(cfg.Name, procs, api.Pid()) {
			return 0, fmt.Errorf("start ETW session %q: %w", cfg.Name, err)
		}
		warn(fmt.Sprintf("stopping session %q left behind by an iotrace process that is gone", cfg.Name))
		if _, serr := api.ControlTrace(0, cfg.Name, ControlStop); serr != nil && !isErrno(serr, ErrNotFound) {
			return 0, fmt.Errorf("start ETW session %q: it exists and could not be stopped: %w", cfg.Name, serr)
		}
		h, err = api.StartTrace(cfg)
		if err != nil {
			return 0, fmt.Errorf("start ETW session %q (after stopping the stale one): %w", cfg.Name, err)
		}
		return h, nil
	case isErrno(err, ErrAccessDenied):
		return 0, fmt.Errorf("start ETW session %q: %w: kernel tracing needs an elevated prompt (Run as administrator) or membership in the Performance Log Users group", cfg.Name, err)
	case isErrno(err, ErrNoSystemResources):
		return 0, fmt.Errorf("start ETW session %q: %w: Windows runs at most 8 kernel sessions (2 are reserved); `iotrace sessions` lists them, `iotrace sessions stop NAME` stops a stale iotrace one", cfg.Name, err)
	}
	return 0, fmt.Errorf("start ETW session %q: %w", cfg.Name, err)
}

// cleanupStale stops every stale iotrace session (left by crashed iotrace
// processes) so that they stop holding kernel logger slots. It returns the
// names stopped.
func cleanupStale(api API, warn func(string)) []string {
	all, err := api.QueryAllTraces()
	if err != nil {
		return nil
	}
	procs, err := api.Processes()
	if err != nil {
		return nil
	}
	var stopped []string
	for _, s := range all {
		if Stale(s.Name, procs, api.Pid()) && !ownSession(s.Name, api.Pid()) {
			if _, err := api.ControlTrace(0, s.Name, ControlStop); err == nil {
				stopped = append(stopped, s.Name)
				pid, _ := OwnerPid(s.Name)
				warn(fmt.Sprintf("stopped session %q left behind by iotrace process %d, which is gone", s.Name, pid))
			}
		}
	}
	return stopped
}
