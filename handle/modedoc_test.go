package handle_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Regression (issue 25): go doc handle.Mode printed "const ReadOnly Mode =
// iota ...", hiding ReadWrite, the mode a program reopens its session
// after a crash with. go doc shows one line a declaration: each mode is
// declared on its own, with its doc.
func TestGoDocListsEveryMode(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	require.NoError(t, err)
	files := []*ast.File{}
	for _, f := range pkgs["handle"].Files {
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/sessionlog/sessionlog/handle")
	require.NoError(t, err)
	var names []string
	for _, ty := range p.Types {
		if ty.Name != "Mode" {
			continue
		}
		for _, v := range ty.Consts {
			require.Len(t, v.Names, 1, "one mode a declaration, so go doc shows it: %v", v.Names)
			require.NotEmpty(t, v.Doc, v.Names[0])
			names = append(names, v.Names[0])
		}
	}
	require.ElementsMatch(t, []string{"ReadOnly", "ReadWrite"}, names)
}
