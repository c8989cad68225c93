package peid

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// The fixture is symbolize/pdb/testdata/modules.c linked by lld-link for
// x64 with /debug (its CodeView record names /tmp/pdbt/x.pdb); the size
// and machine are what llvm-readobj --file-headers reports.
func TestRead(t *testing.T) {
	b, err := os.ReadFile("testdata/modules.exe")
	if err != nil {
		t.Fatal(err)
	}
	id, err := Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !id.HasPDB || id.PDBName != "/tmp/pdbt/x.pdb" || id.PDBAge != 1 || id.Machine != 0x8664 || id.SizeOfImage != 0x5000 {
		t.Errorf("identity %+v", id)
	}
	// Not a PE: an error that says so.
	if _, err := Read(bytes.NewReader([]byte("\x7fELF....")), 8); !errors.Is(err, ErrNotPE) {
		t.Errorf("ELF bytes: %v, want ErrNotPE", err)
	}
	// Truncated: an error, never a panic.
	for _, n := range []int{2, 64, 300} {
		if _, err := Read(bytes.NewReader(b[:n]), int64(n)); err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
}

func FuzzRead(f *testing.F) {
	if b, err := os.ReadFile("testdata/modules.exe"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := Read(bytes.NewReader(data), int64(len(data)))
		if err == nil && id.HasPDB && len(id.PDBName) > len(data) {
			t.Fatalf("PDB name longer than the file")
		}
	})
}
