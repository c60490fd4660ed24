package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// exportLimits caps the exported top-level names of a package: a package
// exports what its users need, and no name exists only as plumbing for one
// caller inside the module (that goes unexported, or to a package under
// internal/). eventlog's users are readers and writers of the format
// (docs/format.md); handle's, programs that keep sessions in a store (a
// store's own plumbing is handle/core's).
var exportLimits = []struct {
	dir   string // the package's folder, from the repository's root
	limit int
}{
	{"eventlog", 55},
	{"handle", 60},
}

// TestExportedNamesUnderLimit fails when a package of exportLimits exports
// more top-level names than its limit, and lists them.
func TestExportedNamesUnderLimit(t *testing.T) {
	root := repoRoot(t)
	for _, tt := range exportLimits {
		t.Run(tt.dir, func(t *testing.T) {
			names := exportedNames(t, filepath.Join(root, tt.dir))
			require.NotEmpty(t, names, "no exported name in %s: is the folder right?", tt.dir)
			require.LessOrEqualf(t, len(names), tt.limit, "%s exports %d top-level names, over its limit of %d: %s",
				tt.dir, len(names), tt.limit, strings.Join(names, " "))
		})
	}
}

// TestExportedNamesCounts pins what exportedNames counts: every exported
// top-level func (not a method), type, var and const of a non-test file,
// each name of a grouped or multi-name declaration.
func TestExportedNamesCounts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	write("a.go", `package p

type T struct{}
type unexported int

func F()          {}
func (T) Method() {}
func f()          {}

const (
	A = iota
	b
	C
)

var V, W, x = 1, 2, 3
`)
	write("b.go", "package p\n\ntype Alias = T\n")
	write("a_test.go", "package p\n\nfunc TestHelper() {}\n")
	write("notes.txt", "func NotGo() {}\n")
	require.Equal(t, []string{"A", "Alias", "C", "F", "T", "V", "W"}, exportedNames(t, dir))
}

// exportedNames returns, sorted, the exported top-level names of the
// non-test .go files of dir.
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	fset := token.NewFileSet()
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								names = append(names, id.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}
