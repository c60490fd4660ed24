package repocheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// modulePath names the root module, so that the walk up from this package
// stops at the repository's root and not at the nested bench module.
const modulePath = "github.com/sessionlog/sessionlog"

// exempt are the folders whose files may name the outside folder: the
// helper that locates the third-party traces beside a clone, and this
// package, which spells the patterns it looks for.
var exempt = []string{"internal/testkit/tracestest/", "internal/check/repocheck/"}

// citation matches what only someone with the outside folder could follow:
// the product contract's name and the folder beside the clone.
var citation = regexp.MustCompile(`\bSPEC\b|\.\./shared\b|\bshared/(traces|workload)\b|\bshared folder\b`)

// TestNoCitationOutsideTheRepository fails on any text file that cites SPEC
// or the shared folder beside the clone: README, docs, help texts, comments
// and error messages cite docs/format.md §N and docs/cli.md.
func TestNoCitationOutsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	var findings []string
	for _, name := range textFiles(t, root) {
		if hasPrefix(name, exempt) {
			continue
		}
		// Every citation holds one of these words: a file without them
		// is not read line by line.
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		if !bytes.Contains(b, []byte("SPEC")) && !bytes.Contains(b, []byte("shared")) {
			continue
		}
		eachLine(t, filepath.Join(root, name), func(n int, line string) {
			if !citation.MatchString(line) {
				return
			}
			findings = append(findings, fmt.Sprintf("%s:%d: %s", name, n, strings.TrimSpace(line)))
		})
	}
	require.Empty(t, strings.Join(findings, "\n"), "cite docs/format.md §N or docs/cli.md instead")
}

// TestNoReplaceOutsideTheRepository fails on a go.mod replace directive
// whose target is a folder outside the repository: a fresh clone does not
// have it, so the module would not build.
func TestNoReplaceOutsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	var findings []string
	for _, name := range textFiles(t, root) {
		if filepath.Base(name) != "go.mod" {
			continue
		}
		for _, r := range localReplaces(t, filepath.Join(root, name)) {
			target := filepath.Join(root, filepath.Dir(name), r.target)
			if filepath.IsAbs(r.target) {
				target = r.target
			}
			if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				findings = append(findings, fmt.Sprintf("%s:%d: replace => %s leaves the repository", name, r.line, r.target))
			}
		}
	}
	require.Empty(t, strings.Join(findings, "\n"), "a fresh clone has nothing beside it")
}

func TestLocalReplaces(t *testing.T) {
	dir := t.TempDir()
	gomod := filepath.Join(dir, "go.mod")
	require.NoError(t, os.WriteFile(gomod, []byte(`module m

replace a => ../a
replace b v1.0.0 => example.com/b v1.2.0
replace (
	c => ./c // a comment
	d v0.1.0 => /abs/d
	e => example.com/e v1.0.0
)
`), 0o600))
	require.Equal(t, []replace{{3, "../a"}, {6, "./c"}, {7, "/abs/d"}}, localReplaces(t, gomod))
}

func TestCitationPattern(t *testing.T) {
	for line, want := range map[string]bool{
		"// the rows of SPEC §4":                  true,
		"The product contract is `SPEC.md`":       true,
		"replace x => ../../shared/workload":      true,
		"the traces in ../shared/traces/dsh":      true,
		"(shared/workload): a user message":       true,
		"in the shared folder beside it":          true,
		"// the rows of docs/format.md §4":        false,
		"SPECIAL and INSPECT are other words":     false,
		"texts and outputs shared with the state": false,
	} {
		require.Equal(t, want, citation.MatchString(line), line)
	}
}

// replace is a go.mod replace directive whose target is a local folder.
type replace struct {
	line   int
	target string
}

// localReplaces returns the replace directives of a go.mod whose target is
// a folder (a module path with a version is not one).
func localReplaces(t *testing.T, gomod string) []replace {
	t.Helper()
	var out []replace
	inBlock := false
	eachLine(t, gomod, func(n int, line string) {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			return
		case inBlock && f[0] == ")":
			inBlock = false
			return
		case !inBlock && f[0] == "replace" && len(f) == 2 && f[1] == "(":
			inBlock = true
			return
		case !inBlock && f[0] == "replace":
			f = f[1:]
		case !inBlock:
			return
		}
		for i, w := range f {
			if w == "=>" && len(f) == i+2 && isLocal(f[i+1]) {
				out = append(out, replace{n, f[i+1]})
			}
		}
	})
	return out
}

// isLocal tells a folder from a module path, as the go command does.
func isLocal(target string) bool {
	return strings.HasPrefix(target, "./") || strings.HasPrefix(target, "../") || filepath.IsAbs(target) || target == "." || target == ".."
}

// repoRoot walks up from the test's folder to the root module's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module "+modulePath+"\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod of %s above the test", modulePath)
		dir = parent
	}
}

// textFiles returns the repository's tracked files (git ls-files), or in a
// tree that is no git checkout (an exported archive) every file; binary
// files (a NUL byte in their first 8 KiB) left out.
// Paths are relative to root, with forward slashes.
func textFiles(t *testing.T, root string) []string {
	t.Helper()
	names, err := gitFiles(root)
	if err != nil {
		t.Logf("not a git checkout (%v): walking the tree", err)
		names = walkFiles(t, root)
	}
	require.NotEmpty(t, names)
	var out []string
	for _, name := range names {
		head := make([]byte, 8192)
		f, err := os.Open(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree, not yet in the index
		}
		require.NoError(t, err)
		n, _ := f.Read(head)
		require.NoError(t, f.Close())
		if !bytes.Contains(head[:n], []byte{0}) {
			out = append(out, filepath.ToSlash(name))
		}
	}
	return out
}

func gitFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	b, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
}

func walkFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	}))
	return out
}

func eachLine(t *testing.T, path string, fn func(n int, line string)) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		fn(n, sc.Text())
	}
	require.NoError(t, sc.Err(), path)
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
