package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoInternalTypeInPublicAPI fails when a package outside internal/
// exports a func, method, field or interface method whose signature names
// a type of an internal package: its users could call it but not name
// what it returns or takes (seal.ReadTail returned logfile.Tail).
func TestNoInternalTypeInPublicAPI(t *testing.T) {
	root := repoRoot(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "internal" || name == "cmd") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
			return filepath.SkipDir // a nested module
		}
		found = append(found, internalTypesInAPI(t, path, rel)...)
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, found, "exported API naming an internal package's type")
}

// TestInternalTypesInAPIFinds pins what internalTypesInAPI reports.
func TestInternalTypesInAPIFinds(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"), []byte(`package p

import (
	lf "example.com/m/internal/format/logfile"
	"example.com/m/eventlog"
)

type T struct {
	Tail  lf.Tail
	inner lf.Tail
	Ev    eventlog.Event
}

type I interface{ Read() []lf.Tail }

func F(x int) (lf.Tail, error) { return lf.Tail{}, nil }
func (T) M(m map[string]*lf.Tail) {}
func g() lf.Tail { return lf.Tail{} }
func (t T) h() lf.Tail { return t.inner }
func G(e eventlog.Event) {}
`), 0o644))
	require.Equal(t, []string{"p: F", "p: I.Read", "p: T.M", "p: T.Tail"}, internalTypesInAPI(t, dir, "p"))
}

// internalTypesInAPI lists the exported declarations of the package in
// dir whose types name an internal package's.
func internalTypesInAPI(t *testing.T, dir, rel string) []string {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		internal := map[string]bool{} // local names of internal imports
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(strings.Split(p, "/"), "internal") {
				continue
			}
			local := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
			internal[local] = true
		}
		if len(internal) == 0 {
			continue
		}
		names := func(n ast.Node) bool {
			hit := false
			ast.Inspect(n, func(n ast.Node) bool {
				if s, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := s.X.(*ast.Ident); ok && internal[x.Name] {
						hit = true
					}
				}
				return !hit
			})
			return hit
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil {
					recv := receiverName(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					name = recv + "." + name
				}
				if names(d.Type) {
					out = append(out, rel+": "+name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					var fields *ast.FieldList
					switch ty := ts.Type.(type) {
					case *ast.StructType:
						fields = ty.Fields
					case *ast.InterfaceType:
						fields = ty.Methods
					default:
						if names(ts.Type) {
							out = append(out, rel+": "+ts.Name.Name)
						}
						continue
					}
					for _, fl := range fields.List {
						for _, n := range fl.Names {
							if n.IsExported() && names(fl.Type) {
								out = append(out, rel+": "+ts.Name.Name+"."+n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// receiverName is the type name of a method's receiver.
func receiverName(x ast.Expr) string {
	for {
		switch y := x.(type) {
		case *ast.StarExpr:
			x = y.X
		case *ast.IndexExpr:
			x = y.X
		case *ast.IndexListExpr:
			x = y.X
		case *ast.Ident:
			return y.Name
		default:
			return ""
		}
	}
}
