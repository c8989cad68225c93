//go:build !unix

package outfile

const nofollow = 0
