package doccheck_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// snippet is a block of Go code in the documentation: runs of lines that
// must stand, in order, each run contiguous, in one test file ("..." lines
// in the snippet separate runs).
type snippet struct {
	where string // file:line
	runs  [][]string
}

// TestSnippetsAreTestedCode fails for a Go snippet of README.md, of
// docs/sdk.md or of a
// doc.go comment that is not copied from a _test.go file of the
// repository (an Example or a test, which go test compiles and runs).
func TestSnippetsAreTestedCode(t *testing.T) {
	root := repoRoot(t)
	var snippets []snippet
	for _, name := range []string{"README.md", "docs/sdk.md"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		snippets = append(snippets, markdownGo(name, b)...)
	}
	var tests [][]string // the trimmed lines of every test file
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasSuffix(path, "_test.go"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			tests = append(tests, trimmedLines(b))
		case d.Name() == "doc.go":
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			snippets = append(snippets, docGo(rel, b)...)
		}
		return nil
	}))
	require.NotEmpty(t, snippets)
	for _, s := range snippets {
		found := false
		for _, lines := range tests {
			if contains(lines, s.runs) {
				found = true
				break
			}
		}
		require.True(t, found, "%s: this Go snippet is not a copy of an Example or test (copy it from one, with ... where lines are left out):\n%s",
			s.where, strings.Join(join(s.runs), "\n"))
	}
}

// markdownGo returns the ```go blocks of a markdown file.
func markdownGo(name string, b []byte) []snippet {
	var out []snippet
	var cur *snippet
	var block []string
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &snippet{where: name + ":" + itoa(i+2)}
			block = nil
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.runs = runs(block)
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			block = append(block, line)
		}
	}
	return out
}

// docGo returns the code blocks of a doc comment that are Go: the
// tab-indented ones, except those that show file contents or shell
// commands.
func docGo(name string, b []byte) []snippet {
	var out []snippet
	var block []string
	start := 0
	flush := func() {
		if len(block) > 0 && isGo(block) {
			out = append(out, snippet{where: name + ":" + itoa(start), runs: runs(block)})
		}
		block = nil
	}
	for i, line := range strings.Split(string(b), "\n") {
		if code, ok := strings.CutPrefix(line, "//\t"); ok {
			if block == nil {
				start = i + 1
			}
			block = append(block, code)
			continue
		}
		flush()
	}
	flush()
	return out
}

// isGo tells Go code from the other blocks doc comments show (file
// contents, shell commands, messages): Go declares, assigns or calls with
// a context.
func isGo(block []string) bool {
	first := strings.TrimSpace(block[0])
	for _, p := range []string{"{", "go ", "$ ", "cd ", "SESSIONLOG_"} {
		if strings.HasPrefix(first, p) {
			return false
		}
	}
	for _, line := range block {
		if strings.Contains(line, ":=") || strings.HasPrefix(strings.TrimSpace(line), "func ") || strings.Contains(line, "(ctx") {
			return true
		}
	}
	return false
}

// runs splits a block's trimmed lines at its "..." lines.
func runs(block []string) [][]string {
	var out [][]string
	var cur []string
	for _, line := range block {
		l := strings.TrimSpace(line)
		if l == "..." || l == "// ..." {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// contains reports whether lines holds every run, in order, each one
// contiguous.
func contains(lines []string, runs [][]string) bool {
	at := 0
	for _, run := range runs {
		i := index(lines[at:], run)
		if i < 0 {
			return false
		}
		at += i + len(run)
	}
	return true
}

func index(lines, run []string) int {
	for i := 0; i+len(run) <= len(lines); i++ {
		match := true
		for j := range run {
			if lines[i+j] != run[j] {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

func trimmedLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, strings.TrimSpace(sc.Text()))
	}
	return out
}

func join(runs [][]string) []string {
	var out []string
	for i, r := range runs {
		if i > 0 {
			out = append(out, "...")
		}
		out = append(out, r...)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// repoRoot is the folder of the repository's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test")
		dir = parent
	}
}
