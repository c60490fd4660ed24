package file

import (
	"bytes"
	"hash/crc32"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// The posts file (.cache/sessions.posts) keeps the content of posts
// already read, one line each — "<post name>\t<content>\t<crc32>" — so
// that an open in a new process reads one file instead of every post
// (docs/design.md, "The session index"). It is derived, unsynced and
// rewritten whole: a post never changes once named, so a line is right
// for as long as its post is listed; lines of posts a fold removed are
// ignored, and a line that does not check is read from its post.
const sindexPosts = "sessions.posts"

// postsRewriteAt is how many posts an open reads from their files before
// it rewrites the posts file.
const postsRewriteAt = 32

func (s *Store) postsPath() string { return filepath.Join(s.dir, cacheDir, sindexPosts) }

// loadPosts puts the posts of marks that the posts file holds into the
// store's cache of posts. The posts keep slices of the file's bytes: an
// open in a new process reads thousands, so each is not copied.
func (s *Store) loadPosts(marks map[string][]string) {
	c := &s.six
	c.mu.Lock()
	missing := 0
	for _, names := range marks {
		for _, nm := range names {
			if _, ok := c.posts[nm]; !ok && strings.HasSuffix(nm, ".post") {
				missing++
			}
		}
	}
	if missing > len(c.posts) {
		// Sized once, not grown post by post.
		m := make(map[string]post, len(c.posts)+missing)
		maps.Copy(m, c.posts)
		c.posts = m
	}
	c.mu.Unlock()
	if missing == 0 {
		return
	}
	b, err := readRegular(s.fs, s.postsPath())
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		line := b[:i:i]
		b = b[i+1:]
		tab := bytes.IndexByte(line, '\t')
		if tab < 0 {
			continue
		}
		id, _, _ := bytes.Cut(line[:tab], []byte{'.'})
		nm := ""
		for _, m := range marks[string(id)] {
			if m == string(line[:tab]) {
				nm = m
			}
		}
		if _, ok := c.posts[nm]; ok || nm == "" {
			continue // cached, or a post a fold removed
		}
		end := bytes.LastIndexByte(line, '\t')
		if end <= tab || !sumIs(line[end+1:], crc32.ChecksumIEEE(line[:end])) {
			continue
		}
		if p, ok := parsePost(line[tab+1 : end]); ok {
			c.keep(nm, p)
		}
	}
}

// savePosts rewrites the posts file with the posts of marks in the
// store's cache, once an open has read enough posts from their files.
func (s *Store) savePosts(marks map[string][]string) {
	c := &s.six
	c.mu.Lock()
	if c.read < postsRewriteAt {
		c.mu.Unlock()
		return
	}
	var names []string
	for _, ns := range marks {
		for _, nm := range ns {
			if _, ok := c.posts[nm]; ok {
				names = append(names, nm)
			}
		}
	}
	slices.Sort(names)
	var buf []byte
	for _, nm := range names {
		buf = appendLine(buf, nm, string(c.posts[nm].raw))
	}
	c.read = 0
	c.mu.Unlock()
	if !s.cacheUsable() {
		return
	}
	replaceFile(s.fs, s.postsPath(), randomNonce(), buf) // derived: failing costs a later open its posts
}
