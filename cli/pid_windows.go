package cli

import (
	"errors"

	"golang.org/x/sys/windows"
)

// pidExists reports whether a process with this pid runs now.
func pidExists(pid uint32) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		// Access denied means it exists; an invalid parameter means no
		// such process.
		return !errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	var code uint32
	err = windows.GetExitCodeProcess(h, &code)
	windows.CloseHandle(h)
	return err != nil || code == 259 // STILL_ACTIVE
}
