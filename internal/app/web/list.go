package web

import (
	"bytes"
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/ops/inspect"
)

// listRow is one session of the list page.
type listRow struct {
	handle.Info
	Depth  int
	Parent string // describeParent
}

// Indent is the row's depth in the tree, as a class suffix.
func (r listRow) Indent() int { return min(r.Depth, 12) }

type listPage struct {
	Rows       []listRow
	Q, Sort    string
	Text       string
	Total      int
	Matched    int
	Page       int
	Prev, Next string // links, "" when none
}

// handleList shows the sessions: searched (q matches the ID, a label's key
// or value, or k=v), sorted (age, last activity, size, events, or tree:
// every fork and child under its parent), one page at a time; ?text= keeps
// the sessions whose events hold the text. It answers from the header index
// where the order and search need only headers (see sessions), from a Stat
// of each session otherwise; stop and verdict are fetched by the page from
// /api/stat for the rows it shows. So the default is newest first: ls's
// order, the last active first (?sort=active), reads every session's tail,
// about 6 times the cost on a store of 10,000 (BenchmarkList10k).
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	text := r.URL.Query().Get("text")
	sortBy := r.URL.Query().Get("sort")
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 0)
	// Sorted by age or as a tree, searched by ID and labels, the list
	// needs only headers: from the store's header index, with a Stat of
	// the rows shown. By size or events, or searching text, every session
	// is described.
	lazy := (sortBy == "" || sortBy == "tree") && text == ""
	infos, lazy, err := s.sessions(r.Context(), lazy)
	if err != nil {
		s.fail(w, err)
		return
	}
	rows := order(infos, sortBy)
	var hits []listRow
	for _, row := range rows {
		if !matches(row.Info, q) {
			continue
		}
		if text != "" {
			found, err := s.holds(r.Context(), row.ID, text)
			if err != nil {
				s.log.Warn("serve: text search", "id", row.ID, "err", err)
			}
			if !found {
				continue
			}
		}
		hits = append(hits, row)
	}
	out := listPage{Q: q, Text: text, Sort: sortBy, Total: len(infos), Matched: len(hits), Page: page}
	from := min(page*s.listPage, len(hits))
	to := min(from+s.listPage, len(hits))
	out.Rows = hits[from:to]
	if lazy {
		for i := range out.Rows {
			info, err := s.store.Stat(r.Context(), out.Rows[i].ID)
			if err != nil {
				s.log.Warn("serve: stat", "id", out.Rows[i].ID, "err", err)
				continue
			}
			out.Rows[i].Info = info
		}
	}
	link := func(p int) string {
		v := url.Values{"page": {strconv.Itoa(p)}}
		if q != "" {
			v.Set("q", q)
		}
		if text != "" {
			v.Set("text", text)
		}
		if sortBy != "" {
			v.Set("sort", sortBy)
		}
		return "/?" + v.Encode()
	}
	if page > 0 {
		out.Prev = link(page - 1)
	}
	if to < len(hits) {
		out.Next = link(page + 1)
	}
	s.render(w, "list.html", out)
}

// sessions returns the sessions newest first. With headersOnly they hold
// only ID, path and header, from the store's session tree (lazy true);
// otherwise each is described by Stat (List).
func (s *Server) sessions(ctx context.Context, headersOnly bool) ([]handle.Info, bool, error) {
	if headersOnly {
		roots, err := s.store.Tree(ctx)
		if err != nil {
			return nil, false, err
		}
		var out []handle.Info
		var walk func(ns []*handle.Node)
		walk = func(ns []*handle.Node) {
			for _, n := range ns {
				out = append(out, handle.Info{ID: n.Header.ID, Path: n.Path, Header: n.Header})
				walk(n.Children)
			}
		}
		walk(roots)
		slices.SortFunc(out, func(a, b handle.Info) int {
			return cmp.Or(cmp.Compare(b.Header.CreatedAt, a.Header.CreatedAt), strings.Compare(b.ID, a.ID))
		})
		return out, true, nil
	}
	infos, err := s.store.List(ctx, handle.SkipBroken(func(id string, err error) {
		s.log.Warn("serve: session not listed", "id", id, "err", err)
	}))
	return infos, false, err
}

// holds reports whether the data of an event of session id holds text,
// case-insensitively, as the log stores it (JSON: a quote or a non-ASCII
// character may be escaped there). It reads the whole log: a text search
// costs a read of every session the other filters leave.
func (s *Server) holds(ctx context.Context, id, text string) (bool, error) {
	h, err := s.store.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return false, err
	}
	defer h.Close()
	needle := bytes.ToLower([]byte(text))
	for e, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			return false, err
		}
		if bytes.Contains(bytes.ToLower(e.Data), needle) {
			return true, nil
		}
	}
	return false, nil
}

// matches reports whether q (empty matches all) names the session: a
// substring of its ID or of a label's key or value, or k=v with v a
// substring of label k's value.
func matches(info handle.Info, q string) bool {
	if q == "" {
		return true
	}
	q = strings.ToLower(q)
	if strings.Contains(strings.ToLower(info.ID), q) {
		return true
	}
	k, v, kv := strings.Cut(q, "=")
	for key, val := range info.Header.Labels {
		key, val = strings.ToLower(key), strings.ToLower(val)
		if kv && key == k && strings.Contains(val, v) {
			return true
		}
		if !kv && (strings.Contains(key, q) || strings.Contains(val, q)) {
			return true
		}
	}
	return false
}

// order sorts the sessions for the list: newest first (List's order) by
// default, the last active first as ls lists them (inspect.ByActivity),
// largest first by size or events, or as a tree.
func order(infos []handle.Info, by string) []listRow {
	if by == "active" {
		infos = slices.Clone(infos)
		inspect.ByActivity(infos)
	}
	rows := make([]listRow, len(infos))
	for i, info := range infos {
		rows[i] = listRow{Info: info, Parent: describeParent(info.Header.Parent)}
	}
	switch by {
	case "size":
		slices.SortStableFunc(rows, func(a, b listRow) int { return cmp.Compare(b.SizeBytes, a.SizeBytes) })
	case "events":
		slices.SortStableFunc(rows, func(a, b listRow) int { return cmp.Compare(b.Events, a.Events) })
	case "tree":
		return tree(rows)
	}
	return rows
}

// tree orders rows depth first: roots newest first, each session's forks
// and children under it, oldest first. A session whose parent is not in
// the store is a root; one whose parents loop is shown last, as a root.
func tree(rows []listRow) []listRow {
	byID := map[string]int{}
	for i, r := range rows {
		byID[r.ID] = i
	}
	kids := map[string][]int{}
	var roots []int
	for i, r := range rows {
		if p := r.Header.Parent; p != nil {
			if _, ok := byID[p.ID]; ok {
				kids[p.ID] = append(kids[p.ID], i)
				continue
			}
		}
		roots = append(roots, i)
	}
	out := make([]listRow, 0, len(rows))
	seen := make([]bool, len(rows))
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if seen[i] {
			return
		}
		seen[i] = true
		r := rows[i]
		r.Depth = depth
		out = append(out, r)
		k := kids[r.ID]
		for j := len(k) - 1; j >= 0; j-- { // rows are newest first: children oldest first
			walk(k[j], depth+1)
		}
	}
	for _, i := range roots {
		walk(i, 0)
	}
	for i := range rows {
		walk(i, 0)
	}
	return out
}
