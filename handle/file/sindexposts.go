package file

import (
	"bytes"
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
// store's cache of posts.
func (s *Store) loadPosts(marks map[string][]string) {
	listed := map[string]bool{}
	c := &s.six
	c.mu.Lock()
	for _, names := range marks {
		for _, nm := range names {
			if _, ok := c.posts[nm]; !ok && strings.HasSuffix(nm, ".post") {
				listed[nm] = true
			}
		}
	}
	c.mu.Unlock()
	if len(listed) == 0 {
		return
	}
	b, err := readRegular(s.fs, s.postsPath())
	if err != nil {
		return
	}
	found, found2raw := map[string]post{}, map[string]string{}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		line := b[:i]
		b = b[i+1:]
		tab := bytes.IndexByte(line, '\t')
		if tab < 0 || !listed[string(line[:tab])] {
			continue
		}
		ln, ok := parseLine(line)
		if !ok {
			continue
		}
		raw := ln.value + "\n"
		if p, ok := parsePost([]byte(raw)); ok {
			found[ln.key], found2raw[ln.key] = p, raw
		}
	}
	c.mu.Lock()
	for nm, p := range found {
		c.keep(nm, p, found2raw[nm])
	}
	c.mu.Unlock()
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
			if _, ok := c.raw[nm]; ok {
				names = append(names, nm)
			}
		}
	}
	slices.Sort(names)
	var buf []byte
	for _, nm := range names {
		buf = appendLine(buf, nm, strings.TrimSuffix(c.raw[nm], "\n"))
	}
	c.read = 0
	c.mu.Unlock()
	if !s.cacheUsable() {
		return
	}
	replaceFile(s.fs, s.postsPath(), randomNonce(), buf) // derived: failing costs a later open its posts
}
