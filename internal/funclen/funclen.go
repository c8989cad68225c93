// Package funclen finds the hand-written Go functions of a tree longer
// than a limit, so that the rule "no function over 150 lines unless it is
// a measured hot path" is checked (TestNoLongFunctions) rather than
// remembered. Written here because it is thirty lines of go/ast.
package funclen

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Func is a function over the limit.
type Func struct {
	// Name is "path/to/file.go Func" or "path/to/file.go (Type).Method",
	// the path relative to the root, with '/'.
	Name string
	// Lines is its length, from func to the closing brace.
	Lines int
	// Doc is its doc comment.
	Doc string
}

// Find returns the functions longer than limit lines in the Go files
// below root, longest first, leaving out tests, generated files (a "Code
// generated ... DO NOT EDIT." comment) and directories whose name starts
// with '.' or '_' or is testdata.
func Find(root string, limit int) ([]Func, error) {
	var out []Func
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > limit {
				out = append(out, Func{Name: filepath.ToSlash(rel) + " " + funcName(fd), Lines: n, Doc: fd.Doc.Text()})
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Lines != out[j].Lines {
			return out[i].Lines > out[j].Lines
		}
		return out[i].Name < out[j].Name
	})
	return out, err
}

// funcName is "Func" or "(Type).Method".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	var b bytes.Buffer
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			b.WriteString("(" + x.Name + ").")
		}
		break
	}
	return b.String() + fd.Name.Name
}
