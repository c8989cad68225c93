package systable

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/event"
)

// TestTable checks every row for what Decode, the tracer and the BPF side
// rely on: a name, an op, a number on amd64 or arm64, string slots, and
// the roles the flags and names need.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for i := range Table {
		r := &Table[i]
		if r.Name == "" || r.Op == event.OpUnknown {
			t.Errorf("row %d: no name or op", i)
		}
		if seen[r.Name] {
			t.Errorf("%s: two rows", r.Name)
		}
		seen[r.Name] = true
		if err := r.index(); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
		_, amd := r.Number("amd64")
		_, arm := r.Number("arm64")
		if !amd && !arm {
			t.Errorf("%s: no number on amd64 or arm64 (a typo, or numbers.go is older than the call: go generate)", r.Name)
		}
		if Untraced[r.Name] != "" {
			t.Errorf("%s: traced and listed in Untraced", r.Name)
		}
		if r.Flags&(EmptyPath|NullPath) != 0 && (!r.Has(DirFD) || !r.Has(Path)) {
			t.Errorf("%s: EmptyPath or NullPath without DirFD and Path", r.Name)
		}
		if r.Flags&EmptyPath != 0 && !r.Has(AtFlags) && !r.Has(AtFlagsInfo) {
			t.Errorf("%s: EmptyPath without AT_* flags", r.Name)
		}
		if (r.Has(DirFD) && !r.Has(Path)) || (r.Has(DirFD2) && !r.Has(Path2)) {
			t.Errorf("%s: a directory descriptor with no path relative to it", r.Name)
		}
		if strings.Contains(r.NewName, "%s") != r.Has(FDLabel) {
			t.Errorf("%s: NewName %q and the FDLabel argument go together", r.Name, r.NewName)
		}
		if (r.Do == DoNewFD || r.Do == DoFDPair) != (r.NewName != "") {
			t.Errorf("%s: NewName %q is for DoNewFD and DoFDPair", r.Name, r.NewName)
		}
		if r.CloexecBit != 0 && int(r.CloexecArg) >= len(r.Args) {
			t.Errorf("%s: close-on-exec flag in argument %d of %d", r.Name, r.CloexecArg, len(r.Args))
		}
		if r.Has(FDPair) != (r.Do == DoFDPair) {
			t.Errorf("%s: FDPair and DoFDPair go together", r.Name)
		}
		if (r.Ret == RetFD) != (r.Kernel&ReadNewFile != 0) {
			t.Errorf("%s: a new descriptor's file is read at exit (RetFD with ReadNewFile)", r.Name)
		}
	}
	used := map[Handler]bool{}
	for i := range Table {
		used[Table[i].Do] = true
	}
	for h := Generic; h < NumHandlers; h++ {
		if !used[h] {
			t.Errorf("handler %d: no row names it", h)
		}
	}
	for i := 0; i < 6; i++ {
		if ByName(Table[i].Name) != Call(i+1) || Lookup(Call(i+1)) != &Table[i] {
			t.Errorf("%s: ByName/Lookup disagree with the row's index", Table[i].Name)
		}
	}
	if Lookup(0) != nil || Lookup(Calls()+1) != nil || ByName("getcwd") != 0 {
		t.Error("Lookup or ByName finds a call that is not a row")
	}
}

// TestDecode decodes raw argument registers, as a backend that reads them
// without BPF (ptrace) would, for calls of each kind of role.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		args [6]uint64
		want func(e *event.Event, r Refs) bool
	}{
		{"pread64", [6]uint64{3, 0xdead, 4096, 8192}, func(e *event.Event, r Refs) bool {
			return r.HasFD && r.FD == 3 && e.Size == 4096 && e.Offset == 8192
		}},
		{"openat", [6]uint64{0xffffff9c, 0xbeef, 0o102, 0o644}, func(e *event.Event, r Refs) bool {
			return r.Dir[0] == AtFDCWD && e.OpenFlags == 0o102 && e.Mode == 0o644 && !r.HasFD
		}},
		{"renameat2", [6]uint64{5, 1, 6, 2, 1}, func(e *event.Event, r Refs) bool {
			return r.Dir == [2]int32{5, 6} && e.Info == 1
		}},
		{"sendfile", [6]uint64{4, 3, 0, 100}, func(e *event.Event, r Refs) bool {
			return r.FD == 3 && r.HasOutFD && r.OutFD == 4 && e.Info == 4 && e.Size == 100
		}},
		{"statx", [6]uint64{7, 0, 0x1000}, func(e *event.Event, r Refs) bool {
			return r.AtFlags == 0x1000 && e.Info == 0x1000 && r.Dir[0] == 7
		}},
		{"close_range", [6]uint64{3, 9, 4}, func(e *event.Event, r Refs) bool {
			return e.FD == 3 && e.Size == 7 && e.Info == 4 && !r.HasFD
		}},
		{"ioctl", [6]uint64{3, 0x541b}, func(e *event.Event, r Refs) bool {
			return e.Info == 0x541b && e.Note == "FIONREAD"
		}},
		{"mmap", [6]uint64{0, 8192, 5, 2, 3, 4096}, func(e *event.Event, r Refs) bool {
			return e.Size == 8192 && e.IOFlags == 5 && e.Info == 2 && r.FD == 3 && e.Offset == 4096
		}},
		{"openat2", [6]uint64{3, 1, 0o2000000, 0o600}, func(e *event.Event, r Refs) bool {
			return e.OpenFlags == 0o2000000 && e.Mode == 0o600
		}},
		{"readv", [6]uint64{3, 0x1000, 2}, func(e *event.Event, r Refs) bool {
			return r.IOV && r.FD == 3 && e.Size == 0
		}},
	} {
		row := Lookup(ByName(tc.name))
		if row == nil {
			t.Fatalf("%s: not in the table", tc.name)
		}
		e := event.New()
		var r Refs
		row.Decode(&tc.args, &e, &r)
		if !tc.want(&e, r) {
			t.Errorf("%s%v: event %+v refs %+v", tc.name, tc.args, e, r)
		}
	}
	// Strings: the arguments read from the caller, in order.
	if got := Lookup(ByName("linkat")).Strings(); got != [2]int{1, 3} {
		t.Errorf("linkat strings %v", got)
	}
	if r := Lookup(ByName("symlinkat")); r.StringSlot(Target) != 0 || r.StringSlot(Path) != 1 {
		t.Errorf("symlinkat: target in string %d, path in %d", r.StringSlot(Target), r.StringSlot(Path))
	}
}

// TestNumbers checks numbers.go against a few numbers every kernel has,
// and the reverse lookups.
func TestNumbers(t *testing.T) {
	for _, c := range []struct {
		arch, name string
		nr         int
	}{{"amd64", "read", 0}, {"amd64", "openat", 257}, {"arm64", "openat", 56}, {"arm64", "newfstatat", 79}, {"amd64", "fstat", 5}, {"amd64", "name_to_handle_at", 303}, {"arm64", "open_by_handle_at", 265}} {
		if nr, ok := Lookup(ByName(c.name)).Number(c.arch); !ok || nr != c.nr {
			t.Errorf("%s on %s: %d %v, want %d", c.name, c.arch, nr, ok, c.nr)
		}
		if Name(c.arch, c.nr) != c.name || ByNumber(c.arch, c.nr) != ByName(c.name) {
			t.Errorf("%s on %s: number %d names %q", c.name, c.arch, c.nr, Name(c.arch, c.nr))
		}
	}
	if _, ok := Lookup(ByName("open")).Number("arm64"); ok {
		t.Error("open has a number on arm64 (it has none: libc uses openat)")
	}
	if Name("amd64", -1) != "" || Name("amd64", 1<<20) != "" || Name("mips", 0) != "" || ByNumber("amd64", 7) != 0 {
		t.Error("a number out of the table, or of an untraced call, named a traced call")
	}
}

// TestNumbersGenerated regenerates numbers.go from the golang.org/x/sys
// go.mod requires and compares: after raising x/sys, run go generate.
func TestNumbersGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go run")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		// The Windows test binaries run under wine, without a Go
		// toolchain; CI's Linux run has one.
		t.Skipf("no go command to run the generator: %v", err)
	}
	out := filepath.Join(t.TempDir(), "numbers.go")
	cmd := exec.Command(gobin, "run", "./internal/gennumbers", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gennumbers: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("numbers.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("numbers.go is not what go generate writes now: run go generate ./backend/ebpf/systable")
	}
}
