//go:build linux && (amd64 || arm64)

package ptrace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iotrace/iotrace/backend"
	"github.com/iotrace/iotrace/event"
)

// TestUserStacks: with --stacks user, the read of a C program built with
// frame pointers carries a stack through its two functions to main, each
// frame inside a module of the trace (the program's mapping).
func TestUserStacks(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	os.WriteFile(src, []byte(`#include <fcntl.h>
#include <unistd.h>
__attribute__((noinline)) int inner(int fd) { char b[16]; return read(fd, b, sizeof b) + 1; }
__attribute__((noinline)) int outer(int fd) { return inner(fd) + 1; }
int main(void) { int fd = open("/etc/hostname", O_RDONLY); return outer(fd) < 0; }
`), 0o644)
	prog := filepath.Join(dir, "p")
	if out, err := exec.Command("gcc", "-O1", "-fno-omit-frame-pointer", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	s, _ := trace(t, context.Background(), backend.Options{Stacks: backend.StacksUser}, prog)
	var read *event.Event
	for i := range s.events {
		if e := &s.events[i]; e.Native == "read" && e.Path == "/etc/hostname" {
			read = e
		}
	}
	if read == nil || read.Stack == 0 {
		t.Fatalf("the read: %+v", read)
	}
	var stack *event.Fact
	var mods []event.Fact
	for i := range s.facts {
		f := &s.facts[i]
		switch {
		case f.Kind == event.FactStack && f.Handle == read.Stack:
			stack = f
		case f.Kind == event.FactModule && f.Pid == read.Pid:
			mods = append(mods, *f)
		}
	}
	if stack == nil {
		t.Fatal("no stack fact for the read")
	}
	inProg := 0
	for _, ip := range stack.User {
		for _, m := range mods {
			if m.Name == prog && ip >= m.Handle && ip-m.Handle < m.Size {
				inProg++
			}
		}
	}
	// inner, outer and main (the libc wrapper's frame may be skipped).
	if inProg < 3 {
		t.Errorf("stack %#x: %d frames in %s, want inner, outer and main", stack.User, inProg, prog)
	}
	if err := New(Config{}).Supports(backend.Options{Command: []string{"x"}, Stacks: backend.StacksKernel}); err == nil {
		t.Error("--stacks kernel accepted")
	}
}
