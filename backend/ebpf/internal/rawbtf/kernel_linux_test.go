package rawbtf

import (
	"sync"
	"testing"
)

// TestKernel: this kernel's BTF parses, and the tracepoints every kernel
// iotrace runs on has are found.
func TestKernel(t *testing.T) {
	s, release, err := Kernel()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	defer release()
	args, ok := s.TracepointArgs("sys_enter")
	if !ok || len(args) != 2 {
		t.Fatalf("sys_enter: %v %v", args, ok)
	}
	if p, ok := s.PointerTo(args[0]); !ok || s.Name(p) != "pt_regs" {
		t.Errorf("sys_enter's first argument points to %q", s.Name(p))
	}
	if n, ok := s.IntSize(args[1]); !ok || n != 8 {
		t.Errorf("sys_enter's second argument: %d bytes %v, want a long", n, ok)
	}
}

func BenchmarkKernel(b *testing.B) {
	raw, release, err := ReadKernel()
	if err != nil {
		b.Skip(err)
	}
	defer release()
	want := map[string]bool{"REQ_OP_READ": true, "BIO_PAGE_PINNED": true}
	for b.Loop() {
		s, err := Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.EnumValues(want); err != nil {
			b.Fatal(err)
		}
		if _, ok := s.TracepointArgs("io_uring_complete"); !ok {
			b.Fatal("no io_uring_complete")
		}
	}
}

// TestShared: two users side by side get one parse; the blob stays mapped
// until Close and both users' done, in either order.
func TestShared(t *testing.T) {
	if _, release, err := Kernel(); err != nil {
		t.Skipf("no kernel BTF: %v", err)
	} else {
		release()
	}
	k := &Shared{}
	var wg sync.WaitGroup
	specs := make([]*Spec, 2)
	dones := make([]func(), 2)
	for i := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, done, err := k.Get()
			if err != nil {
				t.Error(err)
				return
			}
			specs[i], dones[i] = s, done
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if specs[0] != specs[1] {
		t.Fatal("two parses of the kernel's BTF")
	}
	dones[0]()
	dones[0]() // a second call is harmless
	k.Close()
	if k.s == nil {
		t.Fatal("released while a user still reads it")
	}
	if _, ok := specs[1].TracepointArgs("sys_enter"); !ok {
		t.Error("sys_enter not found after Close")
	}
	dones[1]()
	if k.s != nil || k.release != nil {
		t.Error("not released when the last user was done")
	}
	if _, _, err := k.Get(); err == nil {
		t.Error("Get after Close and release: no error")
	}
	var nilShared *Shared
	s, done, err := nilShared.Get()
	if err != nil || s == nil {
		t.Fatalf("nil Shared: %v", err)
	}
	done()
	nilShared.Close()
}
