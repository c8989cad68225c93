//go:build !linux

package rawbtf

import (
	"errors"
	"runtime"
)

// Kernel reports that only Linux publishes its BTF.
func Kernel() (s *Spec, release func(), err error) {
	return nil, nil, errors.New("kernel BTF: none on " + runtime.GOOS)
}
