package peid

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// The fixture is symbolize/pdb/testdata/modules.c linked by lld-link for
// x64 with /debug (its CodeView record names /tmp/pdbt/x.pdb); the size,
// machine and time stamp are what llvm-readobj --file-headers reports,
// the GUID what llvm-readobj --coff-debug-directory reports.
func TestRead(t *testing.T) {
	b, err := os.ReadFile("testdata/modules.exe")
	if err != nil {
		t.Fatal(err)
	}
	id, err := Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The GUID as llvm-readobj --coff-debug-directory prints it (file order).
	guid := [16]byte{0x91, 0x95, 0x3a, 0x73, 0xc2, 0xc6, 0xe5, 0x94, 0x4c, 0x4c, 0x44, 0x20, 0x50, 0x44, 0x42, 0x2e}
	if !id.HasPDB || id.PDBName != "/tmp/pdbt/x.pdb" || id.PDBAge != 1 || id.PDBGUID != guid ||
		id.Machine != 0x8664 || id.SizeOfImage != 0x5000 || id.TimeDateStamp != 0x6b068fb8 {
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

// readobjIdentity is an image's identity as LLVM's llvm-readobj prints it
// (--file-headers --coff-debug-directory): an independent reader.
type readobjIdentity struct {
	machine                  uint16
	timeDateStamp, sizeImage uint32
	// Of the CodeView debug entry: its time stamp and the RSDS record.
	entryTimeDateStamp uint32
	signature          uint32
	guid               [16]byte
	age                uint32
	pdbName            string
}

// readobj runs llvm-readobj on exe and parses what it prints.
func readobj(t *testing.T, exe string) readobjIdentity {
	t.Helper()
	out, err := exec.Command(testenv.Tool(t, "llvm-readobj"), "--file-headers", "--coff-debug-directory", exe).CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-readobj: %v\n%s", err, out)
	}
	text := string(out)
	field := func(in, re string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^\s*` + re + `\s*$`).FindStringSubmatch(in)
		if m == nil {
			t.Fatalf("llvm-readobj printed no line matching %q:\n%s", re, text)
		}
		return m[1]
	}
	num := func(in, re string, base int) uint32 {
		t.Helper()
		v, err := strconv.ParseUint(field(in, re), base, 32)
		if err != nil {
			t.Fatalf("llvm-readobj %q: %v", re, err)
		}
		return uint32(v)
	}
	hdr, dbg, ok := strings.Cut(text, "DebugDirectory [")
	if !ok {
		t.Fatalf("llvm-readobj printed no debug directory:\n%s", text)
	}
	var r readobjIdentity
	r.machine = uint16(num(hdr, `Machine: \S+ \(0x([0-9A-F]+)\)`, 16))
	r.timeDateStamp = num(hdr, `TimeDateStamp: .* \(0x([0-9A-F]+)\)`, 16)
	r.sizeImage = num(hdr, `SizeOfImage: (\d+)`, 10)
	if got := field(dbg, `Type: (\S+) \(0x[0-9A-F]+\)`); got != "CodeView" {
		t.Fatalf("llvm-readobj: debug entry of type %s, want CodeView", got)
	}
	r.entryTimeDateStamp = num(dbg, `TimeDateStamp: .* \(0x([0-9A-F]+)\)`, 16)
	r.signature = num(dbg, `PDBSignature: 0x([0-9A-F]+)`, 16)
	g, err := hex.DecodeString(strings.ReplaceAll(field(dbg, `PDBGUID: \(([0-9A-F ]+)\)`), " ", ""))
	if err != nil || len(g) != 16 {
		t.Fatalf("llvm-readobj PDBGUID: %x %v", g, err)
	}
	copy(r.guid[:], g)
	r.age = num(dbg, `PDBAge: (\d+)`, 10)
	r.pdbName = field(dbg, `PDBFileName: (.+?)`)
	return r
}

// TestReadobj: images that clang and lld-link build with /debug at test
// time, for x64 and x86, read as llvm-readobj reads them: machine, time
// stamp and size from the headers; the CodeView entry's RSDS signature,
// GUID, age and PDB file name. lld-link writes the header's time stamp
// into the debug entry too, which peid does not read separately: the
// entry's must equal the header's.
func TestReadobj(t *testing.T) {
	for _, arch := range []string{"x86_64", "i686"} {
		t.Run(arch, func(t *testing.T) {
			clang, lld := testenv.Tool(t, "clang"), testenv.Tool(t, "lld-link")
			dir := t.TempDir()
			obj, exe, pdb := filepath.Join(dir, "m.obj"), filepath.Join(dir, "m.exe"), filepath.Join(dir, "m.pdb")
			machine := "/machine:x64"
			if arch == "i686" {
				machine = "/machine:x86"
			}
			for _, cmd := range [][]string{
				{clang, "--target=" + arch + "-pc-windows-msvc", "-g", "-gcodeview", "-c", "../pdb/testdata/modules.c", "-o", obj},
				{lld, "/entry:mainCRTStartup", "/subsystem:console", "/nodefaultlib", "/debug", machine, "/pdb:" + pdb, "/out:" + exe, obj},
			} {
				if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%q: %v\n%s", cmd, err, out)
				}
			}
			want := readobj(t, exe)
			b, err := os.ReadFile(exe)
			if err != nil {
				t.Fatal(err)
			}
			id, err := Read(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if want.signature != 0x53445352 { // "RSDS"
				t.Fatalf("llvm-readobj: CodeView signature %#x, not RSDS", want.signature)
			}
			if !id.HasPDB {
				t.Fatalf("no RSDS record read; llvm-readobj prints %+v", want)
			}
			if id.PDBGUID != want.guid || id.PDBAge != want.age || id.PDBName != want.pdbName {
				t.Errorf("PDB %x age %d %q, llvm-readobj %x age %d %q", id.PDBGUID, id.PDBAge, id.PDBName, want.guid, want.age, want.pdbName)
			}
			if id.PDBName != pdb {
				t.Errorf("PDB name %q, linked with /pdb:%s", id.PDBName, pdb)
			}
			if id.Machine != want.machine || id.TimeDateStamp != want.timeDateStamp || id.SizeOfImage != want.sizeImage {
				t.Errorf("machine %#x stamp %#x size %#x, llvm-readobj %#x %#x %#x",
					id.Machine, id.TimeDateStamp, id.SizeOfImage, want.machine, want.timeDateStamp, want.sizeImage)
			}
			if id.TimeDateStamp != want.entryTimeDateStamp {
				t.Errorf("time stamp %#x, the debug entry's (llvm-readobj) %#x", id.TimeDateStamp, want.entryTimeDateStamp)
			}
		})
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
