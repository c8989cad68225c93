package symbolize

import (
	"path/filepath"
	"strings"
)

// A module's identity comes from a trace: it is data, never a path. The
// parts that name files in the symbol directories are checked against
// what identities look like, and every path built from them is checked
// to stay inside its directory after cleaning.

// Identity limits.
const (
	// A GNU build-id is 8 to 64 bytes of hex (SHA-1's 20 in practice).
	minBuildIDHex, maxBuildIDHex = 16, 128
	// A Go build ID is its action and content IDs, base64 with '/'
	// between them.
	maxGoIDLen = 256
	// A PDB key is the GUID's 32 hex digits and the age's 1 to 8.
	minPDBKey, maxPDBKey = 33, 40
	// maxNameLen bounds a file name (most file systems take 255 bytes).
	maxNameLen = 255
)

// idKind is what a module's identity says about where its symbols are.
type idKind uint8

const (
	idNone    idKind = iota // no identity the symbols can be found by ("" or "pe:")
	idInvalid               // not an identity: refused, counted (BadID)
	idGNU                   // "gnu:" and the build-id's hex
	idGo                    // "go:" and the Go build ID
	idPDB                   // "pdb:NAME.pdb/KEY"
)

// parseID classifies id. For idPDB, name and key are the PDB's base name
// and its symbol-store key; for idGNU, key is the hex build-id.
func parseID(id string) (kind idKind, name, key string) {
	if id == "" || strings.HasPrefix(id, "pe:") {
		return idNone, "", ""
	}
	prefix, rest, _ := strings.Cut(id, ":")
	switch prefix {
	case "gnu":
		if len(rest) >= minBuildIDHex && len(rest) <= maxBuildIDHex && len(rest)%2 == 0 && allIn(rest, isLowerHex) {
			return idGNU, "", rest
		}
	case "go":
		if rest != "" && len(rest) <= maxGoIDLen && allIn(rest, isGoIDByte) {
			return idGo, "", rest
		}
	case "pdb":
		name, key, ok := strings.Cut(rest, "/")
		if ok && validName(name) && len(key) >= minPDBKey && len(key) <= maxPDBKey && allIn(key, isHex) {
			return idPDB, name, key
		}
	}
	return idInvalid, "", ""
}

// validName reports whether s can be one file name: not empty, "." or
// "..", no separator of either OS, no drive or stream colon, no control
// byte.
func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '/' || c == '\\' || c == ':' {
			return false
		}
	}
	return true
}

func allIn(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func isHex(c byte) bool { return isLowerHex(c) || c >= 'A' && c <= 'F' }

// isGoIDByte: base64 (standard and URL alphabets) and the '/' between
// the IDs.
func isGoIDByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("-_+=/", c) >= 0
}

// within joins names under dir, each a single file name, and reports
// whether the cleaned result is still inside dir.
func within(dir string, names ...string) (string, bool) {
	for _, n := range names {
		if !validName(n) {
			return "", false
		}
	}
	base := filepath.Clean(dir)
	p := filepath.Join(append([]string{base}, names...)...)
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return p, true
}
