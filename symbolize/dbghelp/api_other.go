//go:build !(windows && (amd64 || arm64))

package dbghelp

import (
	"errors"
	"runtime"
)

func openAPI() (API, error) {
	return nil, errors.New("dbghelp.dll is used on Windows amd64 and arm64 only, not on " + runtime.GOOS + "/" + runtime.GOARCH)
}
