package live

import (
	"strings"
	"testing"
	"time"

	"github.com/iotrace/iotrace/backend"
)

// TestFindProgram: a command is found where CreateProcess finds it, in
// its order: iotrace's directory, the current directory (unless
// NoDefaultCurrentDirectoryInExePath), System32, System, Windows, PATH;
// ".exe" appended to a name without extension; a path taken as it is.
func TestFindProgram(t *testing.T) {
	files := map[string]bool{}
	for _, p := range []string{`C:\tools\iotrace.exe`, `C:\tools\both.exe`, `C:\work\both.exe`, `C:\work\app.exe`,
		`C:\work\notes.txt`, `C:\work\noext`, `C:\Windows\System32\cmd.exe`, `C:\Windows\System\old.exe`,
		`C:\Windows\notepad.exe`, `C:\Program Files\Git\cmd\git.exe`, `D:\bin\tool.exe`, `C:\work\sub\run.exe`} {
		files[strings.ToLower(p)] = true
	}
	isFile := func(p string) bool { return files[strings.ToLower(p)] }
	s := ProgramSearch{AppDir: `C:\tools`, CurrentDir: `C:\work`, SystemDir: `C:\Windows\System32`, WindowsDir: `C:\Windows`,
		Path: `C:\Windows\System32;"C:\Program Files\Git\cmd";;D:\bin\`}
	for _, c := range []struct{ name, want string }{
		{"app.exe", `C:\work\app.exe`}, // the current directory: exec.LookPath's ErrDot
		{"app", `C:\work\app.exe`},
		{"APP.EXE", `C:\work\APP.EXE`},
		{"both", `C:\tools\both.exe`}, // iotrace's directory first
		{"cmd", `C:\Windows\System32\cmd.exe`},
		{"old", `C:\Windows\System\old.exe`},
		{"notepad", `C:\Windows\notepad.exe`},
		{"git", `C:\Program Files\Git\cmd\git.exe`}, // a quoted PATH entry
		{"tool", `D:\bin\tool.exe`},
		{"notes.txt", `C:\work\notes.txt`}, // an extension: none appended
		{`sub\run`, `sub\run.exe`},         // a path: as it is (relative to the current directory), or with .exe
		{`D:\bin\tool.exe`, `D:\bin\tool.exe`},
		{"noext", ""},               // ".exe" appended: noext.exe is nowhere
		{"noext.", `C:\work\noext`}, // a trailing dot: no extension appended
		{"missing", ""},
	} {
		got, err := findProgram(c.name, s, func(p string) bool {
			if strings.HasPrefix(p, `sub\`) {
				return isFile(`C:\work\` + p)
			}
			return isFile(p)
		})
		if c.want == "" {
			if err == nil {
				t.Errorf("%q: found %q", c.name, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	s.SkipCurrentDir = true
	if got, err := findProgram("app.exe", s, isFile); err == nil {
		t.Errorf("NoDefaultCurrentDirectoryInExePath: found %q in the current directory", got)
	} else if !strings.Contains(err.Error(), "PATH") {
		t.Errorf("error %v", err)
	}
}

// TestTraceCommandInCurrentDir: `trace -- app.exe` with app.exe in the
// current directory starts it (the docs' own example), by its full path.
func TestTraceCommandInCurrentDir(t *testing.T) {
	f := newFakeAPI()
	f.child = &fakeChild{pid: 900, resumed: make(chan struct{}), exit: make(chan struct{})}
	go func() { <-f.child.resumed; close(f.child.exit) }()
	opts := backend.Options{Command: []string{"app.exe", "--flag"}}
	if err := runFake(t, f, Config{NoRundown: true}, opts, &memSink{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if len(f.apps) != 1 || f.apps[0] != `C:\work\app.exe` {
		t.Errorf("started %q", f.apps)
	}
	f = newFakeAPI()
	err := runFake(t, f, Config{NoRundown: true}, backend.Options{Command: []string{"nowhere.exe"}}, &memSink{}, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "nowhere.exe: not found") || len(f.running()) != 0 {
		t.Errorf("a missing program: %v, sessions %v", err, f.running())
	}
}
