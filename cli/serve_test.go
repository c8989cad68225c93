package cli

import (
	"strings"
	"testing"

	"github.com/iotrace/iotrace/serve"
)

// TestServeSafeDefaults: serve listens on this machine only unless told
// otherwise, and its flag mistakes are said before anything starts.
func TestServeSafeDefaults(t *testing.T) {
	if got := newServeCmd().Flags().Lookup("listen").DefValue; got != "127.0.0.1:9477" {
		t.Errorf("serve --listen defaults to %q, want 127.0.0.1:9477", got)
	}
	if serve.DefaultListen != "127.0.0.1:9477" {
		t.Errorf("serve.DefaultListen is %q, want 127.0.0.1:9477", serve.DefaultListen)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--top", "0"}, "--top 0: want at least 1"},
		{[]string{"serve", "--define", "x=1"}, "--define and --script-output go with --script"},
		{[]string{"serve", "extra"}, "unknown command"},
	} {
		_, stderr, code := runCLI(t, c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("iotrace %s: exit %d, %q; want an error saying %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}
