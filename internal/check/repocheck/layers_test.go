package repocheck

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the layer diagram of docs/design.md from the code's imports")

// layersDoc is the page whose "## Layers" section opens with the diagram,
// and regenerateDiagram the command that rewrites it.
const (
	layersDoc         = "docs/design.md"
	layersHeading     = "## Layers"
	regenerateDiagram = "go test ./internal/check/repocheck -run Diagram -update"
)

// outsideLayers are the folders whose packages have no layer: test kits,
// repository checks, commands of the repository and examples. No package
// with a layer may import them; they may import any package.
var outsideLayers = []string{"internal/testkit/", "internal/check/", "internal/cmd/", "examples/"}

// diagramWidth is where a layer's line wraps.
const diagramWidth = 72

// imports maps each package of the root module, named relative to it, to
// the module's packages it imports (not its tests), sorted.
type imports map[string][]string

// TestLayerDiagram holds docs/design.md's layer diagram to the code: every
// package of the product is in one layer, imports only packages of lower
// layers and nothing outside the layers, and the diagram is the layering
// the imports give (layerOf). With -update it rewrites the diagram first.
func TestLayerDiagram(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	root := repoRoot(t)
	g := moduleImports(t, root)
	want := renderDiagram(layerOf(g))
	page := filepath.Join(root, filepath.FromSlash(layersDoc))
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	doc := string(b)
	start, end, err := diagramBlock(doc)
	require.NoError(t, err, layersDoc)
	if *update && doc[start:end] != want {
		doc = doc[:start] + want + doc[end:]
		require.NoError(t, os.WriteFile(page, []byte(doc), 0o644))
		end = start + len(want)
		t.Logf("rewrote the diagram of %s", layersDoc)
	}
	diagram, err := parseDiagram(doc[start:end])
	require.NoError(t, err, layersDoc)
	findings := diagramFindings(g, diagram)
	if len(findings) == 0 && doc[start:end] != want {
		findings = append(findings, "the diagram is not the layering the imports give (an import removed lowers a package)")
	}
	require.Empty(t, strings.Join(findings, "\n"),
		"%s: a package imports only packages of lower layers. Remove the import, or, if the layers are meant to change, run `%s` and review the diagram's diff",
		layersDoc, regenerateDiagram)
}

// moduleImports asks go list for the root module's packages and their
// imports of one another.
func moduleImports(t *testing.T, root string) imports {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.Module.Path}} {{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list ./...: %s", stderr.String())
	g := imports{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != modulePath {
			continue
		}
		name, ok := strings.CutPrefix(f[1], modulePath+"/")
		if !ok {
			continue
		}
		var deps []string
		for _, d := range f[2:] {
			if rel, ok := strings.CutPrefix(d, modulePath+"/"); ok {
				deps = append(deps, rel)
			}
		}
		slices.Sort(deps)
		g[name] = deps
	}
	require.NotEmpty(t, g, "go list found no package of %s", modulePath)
	return g
}

// layerOf gives each package with a layer (not in outsideLayers) one above
// the highest layer it imports, 0 when it imports none of the module's;
// imports of packages without a layer do not count.
func layerOf(g imports) map[string]int {
	layer := map[string]int{}
	var of func(p string) int
	of = func(p string) int {
		if l, ok := layer[p]; ok {
			return l
		}
		l := 0
		for _, d := range g[p] {
			if _, ok := g[d]; ok && !hasPrefix(d, outsideLayers) {
				l = max(l, of(d)+1)
			}
		}
		layer[p] = l
		return l
	}
	for p := range g {
		if !hasPrefix(p, outsideLayers) {
			of(p)
		}
	}
	return layer
}

// renderDiagram lays out layers as the diagram's lines, the top layer
// first: the layer's number, left-aligned, then its packages in order,
// wrapped onto lines that start with spaces.
func renderDiagram(layer map[string]int) string {
	top := 0
	for _, l := range layer {
		top = max(top, l)
	}
	w := len(strconv.Itoa(top))
	var b strings.Builder
	for l := top; l >= 0; l-- {
		var names []string
		for p, pl := range layer {
			if pl == l {
				names = append(names, p)
			}
		}
		slices.Sort(names)
		line := fmt.Sprintf("%-*d", w, l)
		for i, p := range names {
			if i > 0 && len(line)+2+len(p) > diagramWidth {
				b.WriteString(line + "\n")
				line = strings.Repeat(" ", w)
			}
			line += "  " + p
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// parseDiagram reads the diagram's lines: "N  pkg pkg …" starts layer N, a
// line that starts with a space goes on with the layer above it.
func parseDiagram(block string) (map[string]int, error) {
	layer := map[string]int{}
	cur := -1
	for n, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if line[0] != ' ' {
			l, err := strconv.Atoi(f[0])
			if err != nil || l < 0 {
				return nil, fmt.Errorf("diagram line %d: %q does not start with a layer's number", n+1, line)
			}
			cur, f = l, f[1:]
		} else if cur < 0 {
			return nil, fmt.Errorf("diagram line %d: %q goes on with no layer", n+1, line)
		}
		for _, p := range f {
			if l, ok := layer[p]; ok {
				return nil, fmt.Errorf("diagram line %d: %s is in layers %d and %d", n+1, p, l, cur)
			}
			layer[p] = cur
		}
	}
	if len(layer) == 0 {
		return nil, fmt.Errorf("the diagram names no package")
	}
	return layer, nil
}

// diagramFindings says where the imports g break diagram: a package with
// no layer or a layer with no package, an import of the same or a higher
// layer, an import of a package that has no layer.
func diagramFindings(g imports, diagram map[string]int) []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(g)) {
		if hasPrefix(p, outsideLayers) {
			continue
		}
		l, ok := diagram[p]
		if !ok {
			out = append(out, fmt.Sprintf("%s is in the code but in no layer of the diagram: run `%s`", p, regenerateDiagram))
			continue
		}
		for _, d := range g[p] {
			dl, ok := diagram[d]
			switch {
			case hasPrefix(d, outsideLayers):
				out = append(out, fmt.Sprintf("%s imports %s, which is a test kit, a check, a command or an example", p, d))
			case ok && dl >= l:
				out = append(out, fmt.Sprintf("%s (layer %d) imports %s (layer %d)", p, l, d, dl))
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(diagram)) {
		if _, ok := g[p]; !ok {
			out = append(out, fmt.Sprintf("%s is in the diagram but not in the code: run `%s`", p, regenerateDiagram))
		}
	}
	return out
}

// diagramBlock finds the body of the first fenced block of doc's "##
// Layers" section: doc[start:end], without its fences.
func diagramBlock(doc string) (start, end int, err error) {
	h := strings.Index(doc, "\n"+layersHeading+"\n")
	if h < 0 {
		return 0, 0, fmt.Errorf("no %q heading", layersHeading)
	}
	rest := doc[h+1:]
	if next := strings.Index(rest[len(layersHeading):], "\n## "); next >= 0 {
		rest = rest[:len(layersHeading)+next+1]
	}
	open := strings.Index(rest, "\n```")
	if open < 0 {
		return 0, 0, fmt.Errorf("no fenced block in %q", layersHeading)
	}
	nl := strings.Index(rest[open+1:], "\n")
	if nl < 0 {
		return 0, 0, fmt.Errorf("the diagram's block of %q is not closed", layersHeading)
	}
	bodyStart := open + 1 + nl + 1
	closing := strings.Index(rest[bodyStart:], "```")
	if closing < 0 || (closing > 0 && rest[bodyStart+closing-1] != '\n') {
		return 0, 0, fmt.Errorf("the diagram's block of %q is not closed", layersHeading)
	}
	base := h + 1
	return base + bodyStart, base + bodyStart + closing, nil
}

func TestDiagramLayers(t *testing.T) {
	g := imports{
		"eventlog":            nil,
		"seal":                {"eventlog"},
		"handle":              {"eventlog", "seal"},
		"ops/feed":            {"eventlog", "handle"},
		"cmd/logtool":         {"handle", "ops/feed"},
		"internal/testkit/fs": {"handle"},
		"internal/check/x":    {"cmd/logtool"},
		"examples/loop":       {"ops/feed", "internal/testkit/fs"},
	}
	require.Equal(t, map[string]int{"eventlog": 0, "seal": 1, "handle": 2, "ops/feed": 3, "cmd/logtool": 4}, layerOf(g))
	require.Equal(t, "4  cmd/logtool\n3  ops/feed\n2  handle\n1  seal\n0  eventlog\n", renderDiagram(layerOf(g)))
	require.Empty(t, diagramFindings(g, layerOf(g)), "the layering the imports give breaks none of them")
}

func TestDiagramRoundTrip(t *testing.T) {
	layer := map[string]int{"eventlog": 0}
	for i := range 30 {
		layer[fmt.Sprintf("ops/package%02d", i)] = 11
	}
	for i := 1; i < 11; i++ {
		layer[fmt.Sprintf("p%d", i)] = i
	}
	d := renderDiagram(layer)
	for _, line := range strings.Split(d, "\n") {
		require.LessOrEqual(t, len(line), diagramWidth, line)
	}
	require.True(t, strings.HasPrefix(d, "11  ops/package00  ops/package01"), d)
	require.Contains(t, d, "\n1   p1\n0   eventlog\n")
	got, err := parseDiagram(d)
	require.NoError(t, err)
	require.Equal(t, layer, got)
}

func TestDiagramParseRefuses(t *testing.T) {
	for name, block := range map[string]string{
		"no number":       "cmd/logtool\n0  eventlog\n",
		"continued first": "  handle\n0  eventlog\n",
		"twice":           "1  handle\n0  eventlog handle\n",
		"empty":           "\n",
	} {
		_, err := parseDiagram(block)
		require.Error(t, err, name)
	}
}

func TestDiagramFindings(t *testing.T) {
	diagram := map[string]int{"eventlog": 0, "seal": 1, "redact": 1, "handle": 2, "ops/feed": 3}
	for _, tc := range []struct {
		name string
		g    imports
		want []string
	}{
		{"same layer", imports{"eventlog": nil, "seal": {"redact"}, "redact": nil, "handle": nil, "ops/feed": nil},
			[]string{"seal (layer 1) imports redact (layer 1)"}},
		{"higher layer", imports{"eventlog": {"handle"}, "seal": nil, "redact": nil, "handle": nil, "ops/feed": nil},
			[]string{"eventlog (layer 0) imports handle (layer 2)"}},
		{"a test kit", imports{"eventlog": nil, "seal": nil, "redact": nil, "handle": {"internal/testkit/faultfs"}, "ops/feed": nil, "internal/testkit/faultfs": nil},
			[]string{"handle imports internal/testkit/faultfs, which is a test kit, a check, a command or an example"}},
		{"new package", imports{"eventlog": nil, "seal": nil, "redact": nil, "handle": nil, "handle/file": {"handle"}, "ops/feed": nil},
			[]string{"handle/file is in the code but in no layer of the diagram: run `" + regenerateDiagram + "`"}},
		{"gone package", imports{"eventlog": nil, "seal": nil, "handle": nil, "ops/feed": nil},
			[]string{"redact is in the diagram but not in the code: run `" + regenerateDiagram + "`"}},
		{"lower layers only", imports{"eventlog": nil, "seal": {"eventlog"}, "redact": {"eventlog"}, "handle": {"eventlog", "redact", "seal"}, "ops/feed": {"eventlog", "handle"}},
			nil},
	} {
		require.Equal(t, tc.want, diagramFindings(tc.g, diagram), tc.name)
	}
}

func TestDiagramBlock(t *testing.T) {
	doc := "# Design\n\n## Layers\n\nThe packages:\n\n```\n1  handle\n0  eventlog\n```\n\nDependencies point down.\n\n## eventlog\n\n```\nnot it\n```\n"
	start, end, err := diagramBlock(doc)
	require.NoError(t, err)
	require.Equal(t, "1  handle\n0  eventlog\n", doc[start:end])
	for name, bad := range map[string]string{
		"no heading":        "# Design\n\n```\n0  eventlog\n```\n",
		"no block":          "# Design\n\n## Layers\n\nprose\n\n## eventlog\n\n```\n0  eventlog\n```\n",
		"block not closed":  "# Design\n\n## Layers\n\n```\n0  eventlog\n",
		"fence not at line": "# Design\n\n## Layers\n\n```\n0  eventlog ```\n",
	} {
		_, _, err := diagramBlock(bad)
		require.Error(t, err, name)
	}
}
