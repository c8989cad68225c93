package symbolize

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/internal/testenv"
)

// TestDbghelpSymbolizer: on Windows the Symbolizer names a Windows
// module's frames through dbghelp.dll: with the image at its recorded
// path and its PDB in a --symbols store, the frame gets its source line,
// which only dbghelp gives (the PDB reader reads public symbols only).
func TestDbghelpSymbolizer(t *testing.T) {
	const key = "E9A561C00FB7F7264C4C44205044422E1" // symbolize/dbghelp's fixture
	dir := testenv.TempDir(t)
	for src, dst := range map[string]string{
		"dbghelp/testdata/modules.pdb": filepath.Join(dir, "store", "modules.pdb", key, "modules.pdb"),
		"dbghelp/testdata/modules.exe": filepath.Join(dir, "app", "modules.exe"),
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Options{Dirs: []string{filepath.Join(dir, "store")}, DebugDirs: []string{}, NoModulePath: true})
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	m := &Module{Path: filepath.Join(dir, "app", "modules.exe"), ID: "pdb:modules.pdb/" + key, Start: 0x140000000, End: 0x140003000}
	f := s.Symbolize(m, 0x140001012)
	if f.Function != "outer_fn" || f.Reason != Resolved || !strings.HasSuffix(f.File, "modules.c") || f.Line != 6 {
		t.Errorf("frame %+v, want outer_fn (modules.c:6) through dbghelp; problems %q", f, s.Problems())
	}
	// The image gone: dbghelp names it from the identity alone on
	// Windows; wine's dbghelp cannot (it ignores the CodeView data), and
	// the PDB reader names it then, without a line.
	m.Path = `C:\gone\modules.exe`
	m.ID = "pdb:modules.pdb/" + key
	s2 := New(Options{Dirs: []string{filepath.Join(dir, "store")}, DebugDirs: []string{}, NoModulePath: true})
	defer s2.Close()
	if f := s2.Symbolize(m, 0x140001012); f.Function != "outer_fn" || f.Reason != Resolved {
		t.Errorf("image gone: %+v", f)
	} else if !testenv.UnderWine() && f.Line != 6 {
		t.Errorf("image gone: %+v, want modules.c:6 through dbghelp", f)
	}
}
