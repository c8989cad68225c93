//go:build unix

package cli

import (
	"fmt"
	"os/exec"
)

// checkCommand finds the program of `-- COMMAND` as the live backend
// will start it (exec.LookPath, what exec.Command does), so that a
// command that cannot be started is an error before anything is traced
// or written.
func checkCommand(name string) error {
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("cannot start %s: %w", name, err)
	}
	return nil
}
