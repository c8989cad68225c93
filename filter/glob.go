package filter

import (
	"path"
	"strings"
)

// glob is a compiled --path pattern: elements separated by '/', where an
// element "**" matches any number of path elements.
type glob struct {
	elems    []string
	basename bool // no separator in the pattern: match the last element
	lower    []string
}

func compileGlob(p string) (glob, error) {
	p = strings.ReplaceAll(p, `\`, "/")
	g := glob{basename: !strings.Contains(p, "/")}
	if g.basename {
		g.elems = []string{p}
	} else {
		g.elems = strings.Split(p, "/")
	}
	for _, e := range g.elems {
		if e == "**" {
			continue
		}
		if strings.Contains(e, "**") {
			// "a**b" would silently mean "a*b"; say so instead.
			return glob{}, errDoubleStar
		}
		if _, err := path.Match(e, ""); err != nil {
			return glob{}, err
		}
	}
	for _, e := range g.elems {
		g.lower = append(g.lower, strings.ToLower(e))
	}
	return g, nil
}

type globError string

func (e globError) Error() string { return string(e) }

const errDoubleStar = globError(`"**" must be a whole path element ("a/**/b")`)

// match reports whether p (with '/' or '\' separators) matches. fold
// matches case-insensitively.
func (g *glob) match(p string, fold bool) bool {
	elems := g.elems
	if fold {
		elems = g.lower
		p = strings.ToLower(p)
	}
	if g.basename {
		i := strings.LastIndexAny(p, `/\`)
		ok, _ := path.Match(elems[0], p[i+1:])
		return ok
	}
	return matchElems(elems, p)
}

// matchElems matches pattern elements against the path p, element by
// element, with backtracking for "**".
func matchElems(pat []string, p string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return true
			}
			for {
				if matchElems(rest, p) {
					return true
				}
				i := strings.IndexAny(p, `/\`)
				if i < 0 {
					return false
				}
				p = p[i+1:]
			}
		}
		var elem string
		i := strings.IndexAny(p, `/\`)
		if i < 0 {
			elem, p = p, ""
			if len(pat) > 1 {
				// Pattern continues past the path's last element; only
				// trailing "**" elements may match nothing.
				if ok, _ := path.Match(pat[0], elem); !ok {
					return false
				}
				for _, r := range pat[1:] {
					if r != "**" {
						return false
					}
				}
				return true
			}
			ok, _ := path.Match(pat[0], elem)
			return ok
		}
		elem, p = p[:i], p[i+1:]
		if ok, _ := path.Match(pat[0], elem); !ok {
			return false
		}
		pat = pat[1:]
	}
	return p == ""
}
