package marker

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/ring"
)

// sendEnv makes the test binary send a marker (TestHelperSend) to the
// directory it names, with the text of textEnv.
const (
	sendEnv = "IOTRACE_MARKER_SEND_DIR"
	textEnv = "IOTRACE_MARKER_SEND_TEXT"
)

// TestHelperSend is the sender run as another user by
// TestSaveFromAnotherUser.
func TestHelperSend(t *testing.T) {
	dir := os.Getenv(sendEnv)
	if dir == "" {
		t.Skip("a helper of TestSaveFromAnotherUser")
	}
	if n, err := Send(dir, os.Getenv(textEnv)); n != 1 || err != nil {
		t.Fatalf("send: %d, %v", n, err)
	}
}

// TestSaveFromAnotherUser: through the socket, a save request from
// another user than the recording's (by the kernel's credentials) is a
// refused marker; one from root is a request.
func TestSaveFromAnotherUser(t *testing.T) {
	testenv.RequirePrivileged(t, "sends a marker as another user")
	dir, err := os.MkdirTemp("", "marker")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The test binary, where the other user may run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sender")
	copyFile(t, self, bin)
	cmd := exec.Command(bin, "-test.run=^TestHelperSend$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), sendEnv+"="+dir, textEnv+"="+ring.SaveRequestText("the stall"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sender as uid 65534: %v\n%s", err, out)
	}
	m, err := l.Read()
	if err != nil || !m.SaveRefused || m.Uid != 65534 || m.Text != RefusedPrefix+" the stall" {
		t.Errorf("from uid 65534: %+v, %v", m, err)
	}
	if _, err := Send(dir, ring.SaveRequestText("root's")); err != nil {
		t.Fatal(err)
	}
	m, err = l.Read()
	if err != nil || m.SaveRefused || !strings.HasPrefix(m.Text, ring.SavePrefix) {
		t.Errorf("from root: %+v, %v", m, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
