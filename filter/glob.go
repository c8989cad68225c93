package filter

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// glob is a compiled --path pattern, matched by doublestar (a kept
// library, rather than a matcher of our own): '*', '?', [...] and {a,b}
// within path elements, "**" as a whole element for any number of
// elements.
type glob struct {
	pat      string
	lower    string
	basename bool // no separator in the pattern: match the last element
}

func compileGlob(p string) (glob, error) {
	// '\' separates elements as '/' does (Windows paths), so it is not an
	// escape character.
	p = strings.ReplaceAll(p, `\`, "/")
	for _, e := range strings.Split(p, "/") {
		if e != "**" && strings.Contains(e, "**") && !strings.ContainsAny(e, "{}") {
			// "a**b" would silently mean "a*b"; say so instead.
			return glob{}, errDoubleStar
		}
	}
	if !doublestar.ValidatePattern(p) {
		return glob{}, errSyntax
	}
	return glob{pat: p, lower: strings.ToLower(p), basename: !strings.Contains(p, "/")}, nil
}

type globError string

func (e globError) Error() string { return string(e) }

const (
	errDoubleStar = globError(`"**" must be a whole path element ("a/**/b")`)
	errSyntax     = globError(`syntax error (unclosed '[' or '{', or an empty [])`)
)

// match reports whether p (with '/' or '\' separators) matches. fold
// matches case-insensitively.
func (g *glob) match(p string, fold bool) bool {
	pat := g.pat
	if fold {
		pat = g.lower
		p = strings.ToLower(p)
	}
	if g.basename {
		i := strings.LastIndexAny(p, `/\`)
		ok, _ := doublestar.Match(pat, p[i+1:])
		return ok
	}
	if strings.IndexByte(p, '\\') >= 0 {
		p = strings.ReplaceAll(p, `\`, "/")
	}
	ok, _ := doublestar.Match(pat, p)
	return ok
}

// validComm reports whether a --comm pattern is well formed.
func validComm(c string) bool { return doublestar.ValidatePattern(c) }

// globMatchComm matches a --comm pattern against a whole process name.
func globMatchComm(pat, comm string) bool {
	ok, _ := doublestar.Match(pat, comm)
	return ok
}
