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

// Session limits of Windows: at most maxSessions trace sessions, of
// which at most kernelSlots kernel sessions, the first two slots kept
// for the NT Kernel Logger and the Circular Kernel Context Logger
// (Configuring and Starting a SystemTraceProvider Session).
const (
	maxSessions = 64
	kernelSlots = 8
)

// reservedKernel are the kernel sessions with slots of their own.
var reservedKernel = map[string]bool{"NT Kernel Logger": true, "Circular Kernel Context Logger": true}

// startSession starts the kernel session cfg of kind k, its GUID the
// first slot of k no running session holds (guids.go), handling what
// goes wrong the way the user needs: a leftover session of our own name
// (from a crashed iotrace with our pid) is stopped and the start retried
// once; a slot taken meanwhile gives way to the next; a name taken by
// another tool is never touched; access denied and no resources say
// why.
func startSession(api API, cfg *SessionConfig, k sessionKind, warn func(string)) (SessionHandle, error) {
	running, _ := api.QueryAllTraces() // none known: every slot is tried
	slots := freeSlots(k, running)
	if len(slots) == 0 {
		return 0, fmt.Errorf("start ETW session %q: the %d session GUIDs iotrace has for it are all in use: `iotrace sessions` lists the sessions", cfg.Name, numSlots)
	}
	restarted := false
	for i := 0; i < len(slots); i++ {
		cfg.Guid = sessionGUID(k, slots[i])
		h, err := api.StartTrace(cfg)
		switch {
		case err == nil:
			return h, nil
		case isErrno(err, ErrAlreadyExists):
			if !nameRunning(api, cfg.Name) {
				continue // the slot's GUID was taken meanwhile
			}
			if restarted {
				return 0, fmt.Errorf("start ETW session %q (after stopping the stale one): %w", cfg.Name, err)
			}
			if err := stopLeftover(api, cfg.Name, warn); err != nil {
				return 0, err
			}
			restarted = true
			i-- // the same slot again
		case isErrno(err, ErrAccessDenied):
			return 0, fmt.Errorf("start ETW session %q: %w: %s", cfg.Name, err, accessAdvice)
		case isErrno(err, ErrNoSystemResources):
			return 0, fmt.Errorf("start ETW session %q: %w: %s", cfg.Name, err, noResourcesCause(api, cfg))
		default:
			return 0, fmt.Errorf("start ETW session %q: %w", cfg.Name, err)
		}
	}
	return 0, fmt.Errorf("start ETW session %q: every free session GUID was taken meanwhile by other sessions", cfg.Name)
}

// accessAdvice says how to get the right to start kernel sessions.
const accessAdvice = "kernel tracing needs an elevated prompt (Run as administrator), or a user an administrator has granted iotrace's session GUIDs and the kernel provider with `iotrace sessions grant USER` (docs/windows.md)"

// nameRunning reports whether a session of that name runs.
func nameRunning(api API, name string) bool {
	_, err := api.ControlTrace(0, name, ControlQuery)
	return err == nil
}

// stopLeftover stops the session name when it was left behind by an
// iotrace process that is gone (or by an earlier process with our pid).
func stopLeftover(api API, name string, warn func(string)) error {
	procs, err := api.Processes()
	if err != nil || !Stale(name, procs, api.Pid()) {
		return fmt.Errorf("start ETW session %q: %w", name, ErrAlreadyExists)
	}
	warn(fmt.Sprintf("stopping session %q left behind by an iotrace process that is gone", name))
	if _, err := api.ControlTrace(0, name, ControlStop); err != nil && !isErrno(err, ErrNotFound) {
		return fmt.Errorf("start ETW session %q: it exists and could not be stopped: %w", name, err)
	}
	return nil
}

// noResourcesCause tells which of Windows' limits refused the session
// cfg: the sessions of the machine, its kernel sessions, or the memory
// for the session's buffers.
func noResourcesCause(api API, cfg *SessionConfig) string {
	all, err := api.QueryAllTraces()
	if err != nil {
		return fmt.Sprintf("Windows runs at most %d sessions, %d of them kernel sessions, and the session's buffers (%d of %d KB at the start) need kernel memory; the sessions cannot be listed (%v)",
			maxSessions, kernelSlots, cfg.MinBuffers, cfg.BufferSizeKB, err)
	}
	var kernel []string
	for i := range all {
		if all[i].LogFileMode&ModeSystemLogger != 0 && !reservedKernel[all[i].Name] {
			kernel = append(kernel, all[i].Name)
		}
	}
	switch {
	case len(all) >= maxSessions:
		return fmt.Sprintf("Windows runs at most %d trace sessions and %d are running: `iotrace sessions` lists them (`iotrace sessions stop NAME` stops a stale iotrace one)", maxSessions, len(all))
	case len(kernel) >= kernelSlots-len(reservedKernel):
		return fmt.Sprintf("Windows runs at most %d kernel sessions, 2 kept for the NT Kernel Logger and the Circular Kernel Context Logger, and these %d hold the others: %s (`iotrace sessions` lists them)",
			kernelSlots, len(kernel), strings.Join(kernel, ", "))
	}
	return fmt.Sprintf("%d sessions run, %d of them kernel sessions, so Windows had no memory for this session's buffers (%d of %d KB at the start, up to %d): a smaller --buffer-size may start",
		len(all), len(kernel), cfg.MinBuffers, cfg.BufferSizeKB, cfg.MaxBuffers)
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
