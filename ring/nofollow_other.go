//go:build !unix

package ring

// noFollow: O_EXCL alone refuses an existing link here.
const noFollow = 0
