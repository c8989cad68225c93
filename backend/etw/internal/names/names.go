// Package names converts the strings of ETW payloads (UTF-16) and maps NT
// paths to DOS paths, each through a cache: a trace names the same files
// and images again and again, and a file is read twice. Written by hand:
// the caches compare UTF-16 bytes with Go strings without converting.
package names

import (
	"encoding/binary"
	"hash/maphash"
	"strings"

	"github.com/iotrace/iotrace/backend/etw/kernel"
	"github.com/iotrace/iotrace/resolve"
)

// Cache converts payload strings and maps paths. It is not safe for
// concurrent use.
type Cache struct {
	tables *resolve.Tables
	strs   map[uint64]string // hash of UTF-16 bytes → string
	seed   maphash.Seed
	dos    map[string]string // NT path → DOS path
}

// New returns a Cache that maps paths through the volume mapping of
// tables.
func New(tables *resolve.Tables) *Cache {
	return &Cache{tables: tables, strs: make(map[uint64]string), seed: maphash.MakeSeed(), dos: make(map[string]string)}
}

// maxStrs bounds the strings Str keeps, maxDOS the paths DOS keeps.
const (
	maxStrs = 1 << 17
	maxDOS  = 1 << 16
)

// Str converts a payload string, once: names come back in the second
// pass of a file (and, in a live session, the same paths come again and
// again). Strings are found by a hash of their UTF-16 bytes and checked
// against them (ASCII strings; others are converted each time), so that
// neither a hit nor a miss allocates more than the string itself.
func (c *Cache) Str(w kernel.WStr) string {
	h := maphash.Bytes(c.seed, w)
	if s, ok := c.strs[h]; ok && sameASCII(w, s) {
		return s
	}
	s := w.String()
	if len(c.strs) < maxStrs {
		c.strs[h] = s
	}
	return s
}

// sameASCII reports whether the UTF-16 string w is the ASCII string s.
func sameASCII(w kernel.WStr, s string) bool {
	if len(w) != 2*len(s) {
		return false
	}
	// Four characters at a time: s's bytes, each below 0x80, spread
	// into the low bytes of w's four UTF-16 units.
	i := 0
	for ; i+4 <= len(s); i += 4 {
		c := uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
		if c&0x80808080 != 0 {
			return false
		}
		spread := uint64(c&0xff) | uint64(c>>8&0xff)<<16 | uint64(c>>16&0xff)<<32 | uint64(c>>24)<<48
		if binary.LittleEndian.Uint64(w[2*i:]) != spread {
			return false
		}
	}
	for ; i < len(s); i++ {
		if w[2*i] != s[i] || w[2*i+1] != 0 || s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// NT cleans a kernel path: "\??\C:\x" becomes "C:\x".
func NT(s string) string {
	return strings.TrimPrefix(s, `\??\`)
}

// DOS maps an NT path to a DOS path through the tables' volume mapping,
// with a cache so that hot paths do not allocate.
func (c *Cache) DOS(nt string) string {
	if d, ok := c.dos[nt]; ok {
		return d
	}
	d := c.tables.DOSPath(nt)
	if len(c.dos) < maxDOS {
		c.dos[nt] = d
	}
	return d
}

// ForgetDOS empties the DOS path cache: the volume mapping changed (a
// file's second pass starts with the whole trace's).
func (c *Cache) ForgetDOS() { c.dos = make(map[string]string) }

// Base returns the last element of a Windows path.
func Base(s string) string {
	if i := strings.LastIndexAny(s, `\/`); i >= 0 {
		return s[i+1:]
	}
	return s
}
