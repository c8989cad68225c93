package testenv

import (
	"os/exec"
	"testing"
)

// Tool returns the path of the program name that a test runs. When it is
// not installed the test is skipped, except with
// IOTRACE_REQUIRE_PRIVILEGED=1 (as in CI, where scripts/setup installs
// it), where it fails.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if Required() {
			t.Fatalf("%s not installed (scripts/setup installs it)", name)
		}
		t.Skipf("%s not installed (scripts/setup installs it)", name)
	}
	return p
}
