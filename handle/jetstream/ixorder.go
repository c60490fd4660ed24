package jetstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// The index's order by last activity (a page of ls, GC's old sessions).
// A KV bucket lists keys in the order they were written, so the order is
// a tree of keys: bits 47..16 of the last activity t (ms, clamped to 48
// bits) are eight hex digits h1…h8, a digit a level (h8 spans 65 s), and
//
//	d.<h1>, d.<h1>.<h2>, … d.<h1>…<h8>   a node with a session under it
//	a.<h1>…<h8>.<t>.<ID>                 a session last active at t
//	w.<ID>                               a session being changed
//
// A walk lists a node's children (at most 16, or a leaf's sessions) and
// visits them in order, so a page or GC's oldest sessions cost the keys
// they visit, not the store. A leaf (a. key) stands while it has the
// activity of its session's entry: a walk drops one that does not (by
// revision, so never one written meanwhile), and a node found empty
// (ixDropNode). A close creates only the nodes missing over its leaf.
//
// Whoever changes a session's entry or leaf holds its w. mark: a writer
// from its open (Create, CreateFrom, Open ReadWrite, Detach, Rewrite) to
// its close, which writes the leaf and its nodes, then the entry, then drops
// the old leaf and the mark. A session with a mark, and a sealed one
// (z., its activity is not in clear), has no trusted leaf: every walk
// describes it from its log. A mark a killed writer left is settled by
// the next answer that finds its lease free.

const actLevels = 8

// actShift is the shift of level l's digit.
func actShift(l int) uint { return uint(16 + 4*(actLevels-1-l)) }

// actClamp is t within the tree's 48 bits.
func actClamp(t int64) int64 { return min(max(t, 0), 1<<48-1) }

// actPath is the node of t's leaf: its three tokens.
func actPath(t int64) string {
	t = actClamp(t)
	var b strings.Builder
	for l := range actLevels {
		if l > 0 {
			b.WriteByte('.')
		}
		b.WriteByte("0123456789abcdef"[(t>>actShift(l))&0xf])
	}
	return b.String()
}

// ixLeaf is the leaf key of session id last active at t: t is in it,
// so a leaf names one activity.
func ixLeaf(t int64, id string) string {
	return "a." + actPath(t) + "." + strconv.FormatInt(t, 10) + "." + id
}

// ixMark is session id's w. mark.
func ixMark(id string) string { return "w." + id }

// actRef is a leaf as listed.
type actRef struct {
	id  string
	t   int64
	key string
	rev uint64
}

// before orders refs as ls does: the last active first, then the
// greater ID.
func (a actRef) before(b actRef) int {
	return cmp.Or(cmp.Compare(b.t, a.t), strings.Compare(b.id, a.id))
}

// ixList returns the keys filter matches, with revision and value, from
// one listing of them.
func (s *Store) ixList(ctx context.Context, kv natsjs.KeyValue, filter string) ([]natsjs.KeyValueEntry, error) {
	var out []natsjs.KeyValueEntry
	err := s.do(ctx, "session index", func(ctx context.Context) error {
		out = out[:0]
		w, err := kv.WatchFiltered(ctx, []string{filter}, natsjs.IgnoreDeletes())
		if err != nil {
			return err
		}
		defer w.Stop()
		for {
			select {
			case e := <-w.Updates():
				if e == nil {
					return nil
				}
				out = append(out, e)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	return out, err
}

// ixPurge removes key, its revision rev and older ones (0: all), unless
// the store is read-only (best effort: a key left costs a look, never an
// answer). It purges the bucket's stream, which leaves no delete marker:
// a listing then never receives a key once removed.
func (s *Store) ixPurge(ctx context.Context, kv natsjs.KeyValue, key string, rev uint64) {
	if s.cfg.readOnly {
		return
	}
	ctx = context.WithoutCancel(ctx)
	opts := []natsjs.StreamPurgeOpt{natsjs.WithPurgeSubject("$KV." + s.ixBucket() + "." + key)}
	if rev > 0 {
		opts = append(opts, natsjs.WithPurgeSequence(rev+1))
	}
	err := s.do(ctx, "session index", func(ctx context.Context) error {
		st, err := s.ixStream(ctx)
		if err == nil {
			err = st.Purge(ctx, opts...)
		}
		return err
	})
	if err != nil {
		s.cfg.hc.Logger.Debug("removing a session index key failed", "key", key, "err", err)
	}
}

// ixStream returns the index bucket's stream.
func (s *Store) ixStream(ctx context.Context) (natsjs.Stream, error) {
	s.ixStMu.Lock()
	defer s.ixStMu.Unlock()
	if s.ixSt != nil {
		return s.ixSt, nil
	}
	st, err := s.js.Stream(ctx, "KV_"+s.ixBucket())
	if err != nil {
		return nil, err
	}
	s.ixSt = st
	return st, nil
}

// ixWalk visits the leaves of the nodes whose span meets [lo, hi]: newest
// first when desc, else oldest first, each leaf's sessions in that order,
// until visit returns false. Nodes found empty are dropped.
func (s *Store) ixWalk(ctx context.Context, kv natsjs.KeyValue, desc bool, lo, hi int64, visit func([]actRef) (bool, error)) error {
	lo, hi = actClamp(lo), actClamp(hi)
	var walk func(path string, level int, base int64, rev uint64) (bool, error)
	walk = func(path string, level int, base int64, rev uint64) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if level == actLevels {
			ents, err := s.ixList(ctx, kv, "a."+path+".*.*")
			if err != nil {
				return false, err
			}
			var refs []actRef
			for _, e := range ents {
				toks := strings.Split(e.Key(), ".")
				t, err := strconv.ParseInt(toks[len(toks)-2], 10, 64)
				id := toks[len(toks)-1]
				if err != nil || actPath(t) != path {
					s.ixPurge(ctx, kv, e.Key(), e.Revision()) // damaged
					continue
				}
				refs = append(refs, actRef{id: id, t: t, key: e.Key(), rev: e.Revision()})
			}
			if len(refs) == 0 {
				s.ixDropNode(ctx, kv, path, rev, "a."+path+".*.*")
				return true, nil
			}
			slices.SortFunc(refs, func(a, b actRef) int {
				if desc {
					return a.before(b)
				}
				return b.before(a)
			})
			return visit(refs)
		}
		filter := "d.*"
		if path != "" {
			filter = "d." + path + ".*"
		}
		ents, err := s.ixList(ctx, kv, filter)
		if err != nil {
			return false, err
		}
		type node struct {
			tok  string
			lo   int64
			rev  uint64
			path string
		}
		var kids []node
		for _, e := range ents {
			tok := e.Key()[strings.LastIndexByte(e.Key(), '.')+1:]
			v, err := strconv.ParseInt(tok, 16, 64)
			if err != nil || len(tok) != 1 {
				s.ixPurge(ctx, kv, e.Key(), e.Revision())
				continue
			}
			nlo := base | v<<actShift(level)
			nhi := nlo | (1<<actShift(level) - 1)
			if nhi < lo || nlo > hi {
				continue
			}
			p := tok
			if path != "" {
				p = path + "." + tok
			}
			kids = append(kids, node{tok: tok, lo: nlo, rev: e.Revision(), path: p})
		}
		if len(ents) == 0 && path != "" {
			s.ixDropNode(ctx, kv, path, rev, filter)
		}
		slices.SortFunc(kids, func(a, b node) int {
			if desc {
				return cmp.Compare(b.lo, a.lo)
			}
			return cmp.Compare(a.lo, b.lo)
		})
		for _, k := range kids {
			if more, err := walk(k.path, level+1, k.lo, k.rev); err != nil || !more {
				return more, err
			}
		}
		return true, nil
	}
	_, err := walk("", 0, 0, 0)
	return err
}

// ixPlace writes session id's leaf for activity t, then creates the
// nodes over it that are missing, upwards (a node that stands is not
// written again). A walk drops a node it found empty, then lists it again
// and writes it back if a child came meanwhile: so a node created or found
// after its child stands, whichever comes first.
func (s *Store) ixPlace(ctx context.Context, kv natsjs.KeyValue, id string, t int64) error {
	if err := s.ixPut(ctx, kv, ixLeaf(t, id), nil); err != nil {
		return err
	}
	toks := strings.Split(actPath(t), ".")
	for l := actLevels; l > 0; l-- {
		key := "d." + strings.Join(toks[:l], ".")
		err := s.do(ctx, "session index", func(ctx context.Context) error {
			_, err := kv.Create(ctx, key, nil)
			if errors.Is(err, natsjs.ErrKeyExists) {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ixDropNode drops node path, found with no child at revision rev, then
// lists its children again and writes it back if one came meanwhile (a
// place that found the node before the drop).
func (s *Store) ixDropNode(ctx context.Context, kv natsjs.KeyValue, path string, rev uint64, children string) {
	if s.cfg.readOnly {
		return
	}
	s.ixPurge(ctx, kv, "d."+path, rev)
	if ents, err := s.ixList(ctx, kv, children); err != nil || len(ents) > 0 {
		s.ixPut(ctx, kv, "d."+path, nil)
	}
}

// ixMarkDirty writes session id's w. mark, before its writer changes its
// log (best effort: without it, a walk may order the session by its
// activity before the change until its writer closes).
func (s *Store) ixMarkDirty(ctx context.Context, id string) {
	kv, err := s.ix(ctx)
	if err == nil {
		err = s.ixPut(ctx, kv, ixMark(id), nil)
	}
	if err != nil {
		s.cfg.hc.Logger.Warn("marking a session changed in the index failed", "id", id, "err", err)
	}
}

// ixWrite writes session id's entry as info and ss say (info nil: not
// described, or sealed) with its leaf, then drops the leaf of the entry
// it replaces and the w. mark (at revision markRev; 0: whichever, under
// the session's lease). The caller holds the mark.
func (s *Store) ixWrite(ctx context.Context, kv natsjs.KeyValue, id string, info *handle.Info, ss uint64, markRev uint64) error {
	var was ixEntry
	if m, err := s.ixGet(ctx, ixKey(id)); err == nil {
		json.Unmarshal(m.Data, &was)
	} else if !errors.Is(err, natsjs.ErrKeyNotFound) {
		return err
	}
	e := ixEntry{SS: ss}
	if info != nil && !info.Sealed {
		e.Info = info
		if err := s.ixPlace(ctx, kv, id, info.LastActive()); err != nil {
			return err
		}
	}
	val, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := s.ixPut(ctx, kv, ixKey(id), val); err != nil {
		return err
	}
	if was.Info != nil && (e.Info == nil || ixLeaf(was.Info.LastActive(), id) != ixLeaf(e.Info.LastActive(), id)) {
		s.ixPurge(ctx, kv, ixLeaf(was.Info.LastActive(), id), 0)
	}
	if info != nil {
		s.ixPurge(ctx, kv, ixMark(id), markRev)
	}
	return nil
}

// ixAlways returns the sessions every walk describes from their logs:
// those with a w. mark (with its revision) and the sealed ones (0).
func (s *Store) ixAlways(ctx context.Context, kv natsjs.KeyValue) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, f := range []string{"w.*", "z.*"} {
		ents, err := s.ixList(ctx, kv, f)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if id, ok := strings.CutPrefix(e.Key(), "w."); ok {
				out[id] = e.Revision()
			} else if _, ok := out[e.Key()[2:]]; !ok {
				out[e.Key()[2:]] = 0
			}
		}
	}
	return out, nil
}

// describeMarked describes the sessions of always (ixAlways), in ID
// order, calling fn for each present one; those Stat cannot describe go
// to broken (nil: the error is returned). A mark whose writer is gone
// is settled: its entry and leaf written, the mark dropped.
func (s *Store) describeMarked(ctx context.Context, kv natsjs.KeyValue, always map[string]uint64, broken func(string, error), fn func(handle.Info)) error {
	for _, id := range slices.Sorted(maps.Keys(always)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, ok, err := s.ixEntry(ctx, id)
		if err != nil {
			return err
		}
		if !ok {
			// A create killed before its entry, or a delete after it.
			if !s.cfg.readOnly && s.unheldEmpty(ctx, id) {
				s.ixPurge(ctx, kv, ixMark(id), always[id])
			}
			continue
		}
		r.marked = always[id] > 0
		info, ok, err := s.describe(ctx, kv, r)
		switch {
		case err != nil && broken != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
			broken(id, err)
			continue
		case err != nil:
			return err
		case !ok:
			continue
		}
		fn(info)
		if rev := always[id]; rev > 0 && !s.cfg.readOnly {
			if held, err := s.writerHeld(ctx, id); err == nil && !held && s.leases != nil {
				if last, err := s.lastMsg(ctx, s.Subject(id)); err == nil {
					s.ixWrite(ctx, kv, id, &info, last.Sequence, rev)
				}
			}
		}
	}
	return nil
}

// unheldEmpty reports whether no writer holds session id and its
// subject holds nothing.
func (s *Store) unheldEmpty(ctx context.Context, id string) bool {
	held, err := s.writerHeld(ctx, id)
	if err != nil || held || s.leases == nil {
		return false
	}
	_, err = s.lastMsg(ctx, s.Subject(id))
	return errors.Is(err, natsjs.ErrMsgNotFound)
}

// leafInfo describes the session of leaf r: ok is false when the leaf is
// not its entry's (then dropped) or the session is absent. A damaged
// entry is described from the log (and written again).
func (s *Store) leafInfo(ctx context.Context, kv natsjs.KeyValue, r actRef) (handle.Info, bool, error) {
	if _, err := s.ixGet(ctx, ixMark(r.id)); err == nil {
		return handle.Info{}, false, nil // changed since the walk began
	}
	e, ok, err := s.ixEntry(ctx, r.id)
	if err != nil {
		return handle.Info{}, false, err
	}
	var ent ixEntry
	if !ok || (json.Unmarshal(e.val, &ent) == nil && (ent.Info == nil || ent.Info.LastActive() != r.t)) {
		s.ixPurge(ctx, kv, r.key, r.rev)
		return handle.Info{}, false, nil
	}
	return s.describe(ctx, kv, e) // a damaged entry too: its log says
}

// page is List for a page by activity with no filter but labels: the
// marked sessions described, then leaves newest first (after the
// cursor) until the page is full.
func (s *Store) page(ctx context.Context, kv natsjs.KeyValue, q handle.ListQuery) ([]handle.Info, error) {
	always, err := s.ixAlways(ctx, kv)
	if err != nil {
		return nil, err
	}
	var out []handle.Info
	err = s.describeMarked(ctx, kv, always, q.Broken, func(in handle.Info) {
		if q.Keeps(in) {
			out = append(out, in)
		}
	})
	if err != nil {
		return nil, err
	}
	hi := int64(1<<63 - 1)
	var cur actRef
	if q.Before != nil {
		hi, cur = q.Before.LastActive, actRef{id: q.Before.ID, t: q.Before.LastActive}
	}
	kept := 0
	seen := map[string]bool{}
	err = s.ixWalk(ctx, kv, true, -1<<63, hi, func(refs []actRef) (bool, error) {
		for _, r := range refs {
			if _, ok := always[r.id]; ok || seen[r.id] || (q.Before != nil && cur.before(r) >= 0) {
				continue
			}
			info, ok, err := s.leafInfo(ctx, kv, r)
			seen[r.id] = seen[r.id] || ok // a stray leaf is not its session's
			switch {
			case err != nil && q.Broken != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
				q.Broken(r.id, err)
			case err != nil:
				return false, err
			case ok && q.Keeps(info):
				out = append(out, info)
				if kept++; kept >= q.Limit {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return q.Page(out), nil
}

// pageOf is List for a page by activity of the candidates refs (a label,
// parent or prefix matched them): those marked or sealed, or whose entry
// says no activity, are described; the others in the order their entries
// say, after the cursor, until the page is full.
func (s *Store) pageOf(ctx context.Context, kv natsjs.KeyValue, refs []ixRef, q handle.ListQuery) ([]handle.Info, error) {
	always, err := s.ixAlways(ctx, kv)
	if err != nil {
		return nil, err
	}
	var out []handle.Info
	var now []ixRef
	type ordered struct {
		ref ixRef
		at  actRef
	}
	var rest []ordered
	for _, r := range refs {
		var e ixEntry
		_, marked := always[r.id]
		if marked || json.Unmarshal(r.val, &e) != nil || e.Info == nil || e.Info.ID != r.id {
			r.marked = always[r.id] > 0
			now = append(now, r)
			continue
		}
		rest = append(rest, ordered{r, actRef{id: r.id, t: e.Info.LastActive()}})
	}
	infos, err := s.describeAll(ctx, kv, now, q.Broken)
	if err != nil {
		return nil, err
	}
	for _, in := range infos {
		if q.Keeps(in) {
			out = append(out, in)
		}
	}
	slices.SortFunc(rest, func(a, b ordered) int { return a.at.before(b.at) })
	kept := 0
	for _, o := range rest {
		if q.Before != nil && (actRef{id: q.Before.ID, t: q.Before.LastActive}).before(o.at) >= 0 {
			continue
		}
		got, err := s.describeAll(ctx, kv, []ixRef{o.ref}, q.Broken)
		if err != nil {
			return nil, err
		}
		for _, in := range got {
			if q.Keeps(in) {
				out = append(out, in)
				kept++
			}
		}
		if kept >= q.Limit {
			break
		}
	}
	return q.Page(out), nil
}

// older is Index.Older: the marked sessions described, then leaves
// oldest first up to cutoff; the forks of each from its parent keys.
func (s *Store) older(ctx context.Context, kv natsjs.KeyValue, cutoff int64) ([]handle.Info, map[string][]string, error) {
	always, err := s.ixAlways(ctx, kv)
	if err != nil {
		return nil, nil, err
	}
	var olds []handle.Info
	keep := func(in handle.Info) {
		if in.LastActive() < cutoff {
			olds = append(olds, in)
		}
	}
	if err := s.describeMarked(ctx, kv, always, func(string, error) {}, keep); err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	err = s.ixWalk(ctx, kv, false, -1<<63, cutoff-1, func(refs []actRef) (bool, error) {
		for _, r := range refs {
			if r.t >= cutoff {
				return false, nil
			}
			if _, ok := always[r.id]; ok || seen[r.id] {
				continue
			}
			info, ok, err := s.leafInfo(ctx, kv, r)
			seen[r.id] = seen[r.id] || ok
			if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				return false, err
			}
			if err == nil && ok {
				keep(info)
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	forks := map[string][]string{}
	for _, in := range olds {
		kids, err := jsIndex{s}.Children(ctx, in.ID)
		if err != nil {
			return nil, nil, err
		}
		for _, k := range kids {
			if k.Header.Parent.Mode == eventlog.ModeFork {
				forks[in.ID] = append(forks[in.ID], k.ID)
			}
		}
	}
	return olds, forks, nil
}
