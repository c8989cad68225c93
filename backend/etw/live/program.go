package live

import (
	"fmt"
	"strings"
)

// Finding the program of `iotrace trace -- app.exe`.
//
// Windows users expect a command to be found as CreateProcess finds it
// (CreateProcessW, lpApplicationName NULL): a name with a path is taken
// as it is; a bare name is looked for in the directory the application
// (iotrace.exe) was loaded from, the current directory, the system
// directories (System32, System, Windows) and the PATH directories, in
// that order, ".exe" appended when it has no extension (a trailing dot
// means none). Go's
// exec.LookPath refuses a program found in the current directory
// (exec.ErrDot, Go 1.19 and later), which made `trace -- app.exe`
// fail next to app.exe. Like NeedCurrentDirectoryForExePath, the current
// directory is skipped when NoDefaultCurrentDirectoryInExePath is set.

// ProgramSearch are the places CreateProcess looks for a program.
type ProgramSearch struct {
	// AppDir is the directory of this process's executable.
	AppDir string
	// CurrentDir is the current directory.
	CurrentDir string
	// SkipCurrentDir is set when NoDefaultCurrentDirectoryInExePath is.
	SkipCurrentDir bool
	// SystemDir (System32) and WindowsDir; WindowsDir\System is the
	// 16-bit system directory, searched too.
	SystemDir, WindowsDir string
	// Path is the PATH environment variable.
	Path string
}

// dirs returns the directories a bare name is looked for in, in order.
func (s *ProgramSearch) dirs() []string {
	out := []string{s.AppDir}
	if !s.SkipCurrentDir {
		out = append(out, s.CurrentDir)
	}
	out = append(out, s.SystemDir)
	if s.WindowsDir != "" {
		out = append(out, winJoin(s.WindowsDir, "System"), s.WindowsDir)
	}
	for _, d := range strings.Split(s.Path, ";") {
		out = append(out, strings.Trim(strings.TrimSpace(d), `"`))
	}
	return out
}

// findProgram returns the path of the program name as CreateProcess
// finds it, with isFile telling whether a path names a file.
func findProgram(name string, s ProgramSearch, isFile func(string) bool) (string, error) {
	if name == "" {
		return "", fmt.Errorf("no program to run")
	}
	if strings.ContainsAny(name, `\/:`) {
		// CreateProcess takes a path as it is; cmd also tries it with
		// .exe, as users expect.
		cands := []string{name}
		if !hasExt(name) {
			cands = append(cands, name+".exe")
		}
		for _, c := range cands {
			if isFile(c) {
				return c, nil
			}
		}
		return "", fmt.Errorf("%s: no such program", name)
	}
	c := name + ".exe"
	switch {
	case strings.HasSuffix(name, "."):
		c = strings.TrimSuffix(name, ".") // "app." : no extension appended
	case hasExt(name):
		c = name
	}
	for _, d := range s.dirs() {
		if d == "" {
			continue
		}
		if p := winJoin(d, c); isFile(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in iotrace's directory, the current directory, the Windows directories or PATH (where CreateProcess looks)", name)
}

// hasExt reports whether the file name of name has an extension.
func hasExt(name string) bool {
	base := name[strings.LastIndexAny(name, `\/:`)+1:]
	return strings.Contains(base, ".")
}

// winJoin joins a Windows directory and a name.
func winJoin(dir, name string) string {
	if strings.HasSuffix(dir, `\`) || strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + `\` + name
}
