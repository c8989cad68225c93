package rawbtf

import "testing"

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
