//go:build !unix

package outfile

import "io/fs"

const nofollow = 0

// ownedByMe cannot tell owners apart here (Windows ACLs): every file is
// taken as the user's own.
func ownedByMe(fs.FileInfo) bool { return true }

// trusted: as ownedByMe.
func trusted(fs.FileInfo) bool { return true }

// unlinked: Windows does not remove a file that is open (nor its
// directory).
func unlinked(fs.FileInfo) bool { return false }
