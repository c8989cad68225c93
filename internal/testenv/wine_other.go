//go:build !windows

package testenv

import "os"

func underWine() bool { return false }

func removeTree(dir string) error { return os.RemoveAll(dir) }
