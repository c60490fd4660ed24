package handle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/logfile"
)

// headersIndex is the derived index of session headers in the cache
// folder: a header is read again only when its file's size or time
// changed, so tree queries over thousands of sessions read a folder
// listing and one small file. Like every derived file it carries a sum
// (see sealDerived): a damaged index is ignored and rewritten.
const headersIndex = "headers.json"

type indexedHeader struct {
	Name    string          `json:"name"`
	Size    int64           `json:"size"`
	ModTime int64           `json:"mtime"` // UnixNano
	Header  eventlog.Header `json:"header"`
}

// headers returns the ID, path and header of every session in the store
// (fileEngine.Headers), from the index where the file did not change.
func (s *FileStore) headers(ctx context.Context) ([]Info, error) {
	entries, err := afero.ReadDir(s.fs, s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("handle: list %q: %w", s.dir, err)
	}
	idxPath := filepath.Join(s.dir, cacheDir, headersIndex)
	old := map[string]indexedHeader{}
	if b, err := readRegular(s.fs, idxPath); err == nil {
		var list []indexedHeader
		if data, ok := openDerived(b); ok && json.Unmarshal(data, &list) == nil {
			for _, ih := range list {
				old[ih.Name] = ih
			}
		}
	}
	var out []Info
	var fresh []indexedHeader
	changed := false
	seen := map[string]bool{}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, enc, ok := ParseFileName(e.Name())
		if !ok || !e.Mode().IsRegular() || seen[id] {
			continue // List and Open report what is not a regular file
		}
		seen[id] = true
		ih, ok := old[e.Name()]
		if !ok || ih.Size != e.Size() || ih.ModTime != e.ModTime().UnixNano() {
			encd, err := s.encodingNamed(enc)
			var hdr eventlog.Header
			if err == nil {
				hdr, err = s.readHeaderAt(location{path: filepath.Join(s.dir, e.Name()), enc: encd})
			}
			switch {
			case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrCorrupt), errors.Is(err, ErrVersion), errors.Is(err, ErrNotRegular):
				continue // deleted meanwhile, or broken: List and Open report it
			case err != nil:
				// An I/O error says nothing about the header: skipping
				// it would hide a fork from Delete, which would then
				// delete its parent.
				return nil, fmt.Errorf("handle: reading the header of %q: %w", e.Name(), err)
			}
			ih, changed = indexedHeader{Name: e.Name(), Size: e.Size(), ModTime: e.ModTime().UnixNano(), Header: hdr}, true
		}
		fresh = append(fresh, ih)
		out = append(out, Info{ID: ih.Header.ID, Path: filepath.Join(s.dir, e.Name()), Header: ih.Header})
	}
	if changed || len(fresh) != len(old) {
		if b, err := json.Marshal(fresh); err == nil {
			s.writeDerived(idxPath, b) // derived: a failure costs a re-read next time
		}
	}
	return out, nil
}

// readHeaderAt reads the header of the log at loc.
func (s *FileStore) readHeaderAt(loc location) (eventlog.Header, error) {
	enc, path := loc.enc, loc.path
	f, err := s.openLog(context.Background(), &loc, os.O_RDONLY)
	if err != nil {
		return eventlog.Header{}, err
	}
	defer f.Close()
	if sf := loc.sealed; sf != nil {
		// What a sealed file shows in clear (its labels are sealed): the
		// index keeps no label of it, and the tree, its lineage, needs
		// none.
		c := sf.head.Clear
		return eventlog.Header{Format: eventlog.FormatName, Version: eventlog.Version, ID: c.ID, CreatedAt: c.CreatedAt, Parent: c.Parent}, nil
	}
	if enc.z == nil {
		h, _, err := logfile.ReadHeader(f, path)
		return h, err
	}
	fi, err := f.Stat()
	if err != nil {
		return eventlog.Header{}, err
	}
	t, err := logfile.ReadZstdTail(f, fi.Size(), enc.z, path)
	return t.Header, err
}

// Node is a session in the session tree: its header, and the sessions
// forked or spawned from it.
type Node struct {
	Header eventlog.Header
	Path   string
	// ParentGone is true when the header names a parent that is not in
	// the store (a child that outlived its parent, or broken lineage).
	ParentGone bool
	Children   []*Node
}

// Tree returns the store's sessions as a forest, from the headers alone:
// roots (sessions without a parent, or whose parent is gone) oldest first,
// each with its forks and children, oldest first.
func (s *FileStore) Tree(ctx context.Context) ([]*Node, error) { return s.core.Tree(ctx) }

// treeOf arranges sessions (a store's headers) as a forest by the
// parents their headers name: roots (sessions without a parent, or
// whose parent is not among infos) oldest first, each with its forks and
// children, oldest first. Sessions whose chain of parents loops hang
// under no root. Only ID, Path and Header of each Info are used.
func treeOf(infos []Info) []*Node {
	nodes := make(map[string]*Node, len(infos))
	for _, in := range infos {
		nodes[in.Header.ID] = &Node{Header: in.Header, Path: in.Path}
	}
	var roots []*Node
	for _, in := range infos {
		n := nodes[in.Header.ID]
		if p := in.Header.Parent; p != nil {
			if parent, ok := nodes[p.ID]; ok && p.ID != in.Header.ID {
				parent.Children = append(parent.Children, n)
				continue
			}
			n.ParentGone = true
		}
		roots = append(roots, n)
	}
	byAge := func(a, b *Node) int {
		if c := a.Header.CreatedAt - b.Header.CreatedAt; c != 0 {
			return int(min(max(c, -1), 1))
		}
		return strings.Compare(a.Header.ID, b.Header.ID)
	}
	for _, n := range nodes {
		slices.SortFunc(n.Children, byAge)
	}
	slices.SortFunc(roots, byAge)
	return roots
}

// Children returns the headers of the sessions forked or spawned from id.
func (s *FileStore) Children(ctx context.Context, id string) ([]eventlog.Header, error) {
	return s.core.Children(ctx, id)
}

// Ancestors returns the headers of id's parent, its parent's parent, and
// so on, nearest first. A parent that is gone ends the chain: gone is its
// ID.
func (s *FileStore) Ancestors(ctx context.Context, id string) (chain []eventlog.Header, gone string, err error) {
	return s.core.Ancestors(ctx, id)
}

// SessionTree returns the tree session id belongs to, from the headers alone:
// its root (the farthest ancestor in the store) with every fork and
// child below it, oldest first, as Tree has them; ParentGone is set on a
// root whose parent is gone. On a store with an index (the file store)
// its cost grows with the tree, not with the store. Paths are left empty.
func SessionTree(ctx context.Context, st Store, id string) (*Node, error) {
	chain, gone, err := st.Ancestors(ctx, id)
	if err != nil {
		return nil, err
	}
	root := eventlog.Header{ID: id}
	if len(chain) > 0 {
		root = chain[len(chain)-1]
	} else {
		info, err := st.Stat(ctx, id)
		if err != nil {
			return nil, err
		}
		root = info.Header
	}
	top := &Node{Header: root, ParentGone: gone != ""}
	seen := map[string]bool{root.ID: true}
	var grow func(n *Node, depth int) error
	grow = func(n *Node, depth int) error {
		if depth >= maxForkDepth {
			return nil
		}
		kids, err := st.Children(ctx, n.Header.ID)
		if err != nil {
			return err
		}
		for _, h := range kids {
			if seen[h.ID] {
				continue // a loop
			}
			seen[h.ID] = true
			c := &Node{Header: h}
			if err := grow(c, depth+1); err != nil {
				return err
			}
			n.Children = append(n.Children, c)
		}
		slices.SortFunc(n.Children, func(a, b *Node) int {
			if c := a.Header.CreatedAt - b.Header.CreatedAt; c != 0 {
				return int(min(max(c, -1), 1))
			}
			return strings.Compare(a.Header.ID, b.Header.ID)
		})
		return nil
	}
	return top, grow(top, 0)
}
