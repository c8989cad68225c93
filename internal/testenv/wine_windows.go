package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/windows"
)

var wine = sync.OnceValue(func() bool {
	// Wine's ntdll exports wine_get_version; Windows' does not.
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
})

func underWine() bool { return wine() }

// removeTree removes dir with DeleteFileW and RemoveDirectoryW, children
// first.
func removeTree(dir string) error {
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	var walk func(string)
	walk = func(d string) {
		ents, err := os.ReadDir(d)
		keep(err)
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			if e.IsDir() {
				walk(p)
				continue
			}
			u, err := syscall.UTF16PtrFromString(p)
			if err == nil {
				err = syscall.DeleteFile(u)
			}
			keep(err)
		}
		u, err := syscall.UTF16PtrFromString(d)
		if err == nil {
			err = syscall.RemoveDirectory(u)
		}
		keep(err)
	}
	walk(dir)
	return firstErr
}
