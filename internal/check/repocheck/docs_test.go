package repocheck

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// maxDocWords caps docs/ without the generated cli.md, counted as wc -w
// counts (runs of non-space): a newcomer reads format.md and design.md in
// under an hour, and every page says what is true now, tersely. A page that
// grows past the cap makes room by cutting, not by a higher cap.
const maxDocWords = 12000

// generatedDocs are the pages written from the code, outside the cap:
// cli.md is the commands' own help (TestCLIDoc in cmd/logtool).
var generatedDocs = []string{"cli.md"}

// TestDocsUnderWordCap fails when docs/*.md, but the generated pages, hold
// more than maxDocWords words, and names each page's count.
func TestDocsUnderWordCap(t *testing.T) {
	root := repoRoot(t)
	counts, total := docWords(t, filepath.Join(root, "docs"))
	require.LessOrEqualf(t, total, maxDocWords, "docs/ (without %s) holds %d words, over the cap of %d: %s",
		strings.Join(generatedDocs, ", "), total, maxDocWords, counts)
}

// docWords counts the words of each page of dir but the generated ones.
func docWords(t *testing.T, dir string) (string, int) {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(dir, "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages, "no pages in %s", dir)
	var counts []string
	total := 0
	for _, p := range pages {
		if slices.Contains(generatedDocs, filepath.Base(p)) {
			continue
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		n := len(strings.Fields(string(b)))
		counts = append(counts, fmt.Sprintf("%s %d", filepath.Base(p), n))
		total += n
	}
	return strings.Join(counts, ", "), total
}

func TestDocWordsCountsAsWC(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A page\n\n| a | b |\n|---|---|\n`x`  y\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cli.md"), []byte("not counted at all\n"), 0o600))
	counts, total := docWords(t, dir)
	require.Equal(t, 11, total) // # A page | a | b | |---|---| `x` y
	require.Equal(t, "a.md 11", counts)
}

// docCitation matches a repository path of a page under docs/, as code,
// help texts and docs cite them.
var docCitation = regexp.MustCompile(`\bdocs/[A-Za-z0-9_-]+\.(md|png)\b`)

// citationExempt are the files whose docs/ paths are not ours: the
// generated corpus's scripted agent edits a page of its own project, its
// fixtures and goldens carry that text, and this package spells examples.
func citationExempt(name string) bool {
	return strings.HasPrefix(name, "internal/cmd/gencorpus/") || strings.HasPrefix(name, "internal/check/repocheck/") ||
		strings.Contains("/"+name, "/testdata/")
}

// TestCitedDocsExist fails on any text file that names a page of docs/
// that is not there (a page folded into another, renamed, removed).
func TestCitedDocsExist(t *testing.T) {
	root := repoRoot(t)
	var findings []string
	for _, name := range textFiles(t, root) {
		if citationExempt(name) {
			continue
		}
		eachLine(t, filepath.Join(root, name), func(n int, line string) {
			for _, doc := range docCitation.FindAllString(line, -1) {
				if _, err := os.Stat(filepath.Join(root, doc)); err != nil {
					findings = append(findings, fmt.Sprintf("%s:%d: %s is not in the repository", name, n, doc))
				}
			}
		})
	}
	require.Empty(t, strings.Join(findings, "\n"), "cite a page that exists")
}

// mdLink matches an inline markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve fails on a relative link of README.md or docs/*.md
// whose file is missing, or whose #anchor names no heading of it, as a
// markdown renderer makes anchors of headings.
func TestDocLinksResolve(t *testing.T) {
	root := repoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	pages = append(pages, filepath.Join(root, "README.md"))
	var findings []string
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		rel = filepath.ToSlash(rel)
		eachLine(t, p, func(n int, line string) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				if msg := checkLink(root, rel, m[1]); msg != "" {
					findings = append(findings, fmt.Sprintf("%s:%d: %s: %s", rel, n, m[1], msg))
				}
			}
		})
	}
	require.Empty(t, strings.Join(findings, "\n"), "fix the link or the heading it names")
}

// checkLink says what is wrong with target, a link of the page from (a
// path relative to root), or "" when it resolves.
func checkLink(root, from, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	dest := from
	if file != "" {
		dest = path.Join(path.Dir(from), file)
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dest)))
	if err != nil {
		if _, serr := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); serr == nil {
			return "" // a folder
		}
		return "no such file"
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	if !slices.Contains(anchors(string(b)), anchor) {
		return "no heading makes that anchor"
	}
	return ""
}

// anchors returns the anchors a markdown renderer gives the headings of
// doc, outside code blocks: lower case, letters, digits, '-' and '_' kept,
// spaces made '-', the rest dropped; a repeated one gets -1, -2, ….
func anchors(doc string) []string {
	var out []string
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, k))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

func TestAnchors(t *testing.T) {
	doc := "# Design\n## §9 Durability: torn tail or corruption\n```\n# not a heading\n```\n" +
		"### `logtool serve [--addr 127.0.0.1:0] [--open]`\n## Figures\n## Figures\n"
	require.Equal(t, []string{"design", "9-durability-torn-tail-or-corruption", "logtool-serve---addr-1270010---open", "figures", "figures-1"}, anchors(doc))
}
