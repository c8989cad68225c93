package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/backend/fake"
	"github.com/iotrace/iotrace/event"
	"github.com/iotrace/iotrace/internal/synth"
)

// missing is a backend that cannot run here.
type missing struct{}

func (missing) Name() string        { return "etw" }
func (missing) Description() string { return "traces Windows kernel file and disk I/O" }
func (missing) Available() error {
	return fmt.Errorf("ETW needs Windows (this is linux): %w", backend.ErrNotSupported)
}
func (missing) Run(context.Context, backend.Options, event.Sink) error {
	return backend.ErrNotSupported
}

func TestBackends(t *testing.T) {
	fb, err := fake.New(fake.Config{Trace: synth.Options{Events: 10}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd := newBackendsCmd(func() []backend.Backend { return []backend.Backend{fb, missing{}} })
	cmd.SetOut(&out)
	cmd.SetArgs([]string{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"LIVE BACKEND", "fake", "available", "replays a synthetic linux trace",
		"etw", "not available", "why not: ETW needs Windows (this is linux): not supported",
		"FILE READER", "iot ", "jsonl",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}

	// The real command lists whatever is built in, and the readers.
	stdout, errOut, code := runCLI(t, "backends")
	if code != 0 || !strings.Contains(stdout, "FILE READER") || !strings.Contains(stdout, "iotrace trace file") {
		t.Errorf("iotrace backends: exit %d\n%s%s", code, stdout, errOut)
	}
}

func TestCompletion(t *testing.T) {
	out, errOut, code := runCLI(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "__start_iotrace") {
		t.Fatalf("completion bash: exit %d, %s", code, errOut)
	}
	// Flag values complete too.
	out, _, code = runCLI(t, "__complete", "print", "x.iot", "--op", "")
	if code != 0 || !strings.Contains(out, "bdiscard") || !strings.Contains(out, "readdir") {
		t.Errorf("--op completion: %q", out)
	}
	out, _, _ = runCLI(t, "__complete", "convert", "x.iot", "-f", "")
	for _, f := range []string{"iot", "jsonl", "csv", "text"} {
		if !strings.Contains(out, f) {
			t.Errorf("--format completion lacks %s: %q", f, out)
		}
	}
}

// otherOS is a backend for another operating system.
type otherOS struct{ missing }

func (otherOS) Available() error {
	return fmt.Errorf("ETW on linux: %w (it is a Windows API)", backend.ErrOtherOS)
}

// denied is a backend for this system that needs a privilege.
type denied struct{ missing }

func (denied) Name() string { return "ebpf" }
func (denied) Available() error {
	return fmt.Errorf("ebpf: loading programs needs root or CAP_BPF: %w", os.ErrPermission)
}

// TestNoBackendSaysWhyHere: when no backend can run, the error gives the
// reasons of the backends for this operating system only (not "ETW needs
// Windows" to a non-root Linux user), and those of the others when there
// is no other reason.
func TestNoBackendSaysWhyHere(t *testing.T) {
	_, err := pickBackend([]backend.Backend{denied{}, otherOS{}}, backend.Options{})
	if err == nil || !strings.Contains(err.Error(), "needs root") || strings.Contains(err.Error(), "ETW") {
		t.Errorf("non-root on Linux: %v; want the ebpf reason only", err)
	}
	_, err = pickBackend([]backend.Backend{otherOS{}}, backend.Options{})
	if err == nil || !strings.Contains(err.Error(), "ETW on linux: not supported") {
		t.Errorf("only a backend for another OS: %v; want its reason", err)
	}
	if !errors.Is(backend.ErrOtherOS, backend.ErrNotSupported) {
		t.Errorf("ErrOtherOS does not wrap ErrNotSupported")
	}
	// The real backends say which OS they are for.
	for _, b := range liveBackends() {
		forOther := (b.Name() == "etw") != (runtime.GOOS == "windows")
		if err := b.Available(); forOther && !errors.Is(err, backend.ErrOtherOS) {
			t.Errorf("%s on %s: %v; want ErrOtherOS", b.Name(), runtime.GOOS, err)
		}
	}
}
