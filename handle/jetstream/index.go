package jetstream

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
)

// The session index (docs/distributed.md, "The session index") is the KV
// bucket <prefix>_index, derived from the stream and kept in step by the
// store:
//
//	s.<I>.<D>.…            a session: its ID one character a token; the
//	                       value an ixEntry
//	l.x<hex k>.x<hex v>.<ID> a label k=v of a clear session
//	p.<parent ID>.<ID>     a session's parent
//	z.<ID>                 a sealed session (its labels are not in clear)
//	a.…, d.…, w.<ID>       the order by last activity, and the sessions
//	                       being changed (ixorder.go)
//	built                  the layout's version, once a build is whole
//
// An ID prefix is the filter s.<its characters>.>, a label or a parent the
// filter l.…/p.….*: a query lists only the keys it matches. An entry holds
// the Info its session had when its subject's last message was stream seq
// SS; every answer checks SS against the subject's last message (one get a
// session answered) and describes the session from its log when they
// differ, and writes the entry again. So appends never touch the index,
// and a log changed behind the store's back is seen.
//
// A session's entry and keys are written before its first message is
// published (Create, CreateFrom: under its lease) and removed after its
// subject is purged (Delete: under its lease). An entry whose subject has
// no message is left out of every answer, and removed once no writer holds
// the session's lease (a create or delete killed mid-way). So no answer
// names an absent session, and no present session lacks an entry.

// ixBucket is the index bucket's name.
func (s *Store) ixBucket() string { return s.cfg.prefix + "_index" }

// ixKey is session id's entry key.
func ixKey(id string) string {
	return "s." + ixTokens(id)
}

// ixTokens is id (or an ID prefix) one character a token.
func ixTokens(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteByte(id[i])
	}
	return b.String()
}

// ixLabel is the key prefix of label k=v (hex, so any label is a token).
func ixLabel(k, v string) string {
	return "l.x" + hex.EncodeToString([]byte(k)) + ".x" + hex.EncodeToString([]byte(v)) + "."
}

const ixBuilt = "built"

// ixVersion is the built mark's value: an index of another layout is
// built again.
const ixVersion = "2"

// ErrNoIndex: a read-only store found no session index (or one of an
// older layout) when a query needed it, and does not build one.
var ErrNoIndex = errors.New("jetstream: no session index")

// ixEntry is a session's entry.
type ixEntry struct {
	// SS is the stream seq of the subject's last message Info describes;
	// 0 before the session's first message.
	SS uint64 `json:"ss"`
	// Info is what Stat said; nil for a sealed session (described by each
	// store with the keys it has) or one not described yet.
	Info *handle.Info `json:"info,omitempty"`
}

// jsIndex answers core.Index from the index bucket.
type jsIndex struct{ s *Store }

var _ core.Index = jsIndex{}

// ix returns the index bucket, creating it and building the index when
// it or its built mark is missing (deleted by hand, or never built).
func (s *Store) ix(ctx context.Context) (natsjs.KeyValue, error) {
	s.ixMu.Lock()
	kv := s.ixKV
	s.ixMu.Unlock()
	if kv != nil {
		m, err := s.ixGet(ctx, ixBuilt)
		if err == nil && string(m.Data) == ixVersion {
			return kv, nil
		}
		if err != nil && !errors.Is(err, natsjs.ErrKeyNotFound) && !ixGone(err) {
			return nil, err
		}
	}
	if s.cfg.readOnly {
		return s.ixReadOnly(ctx)
	}
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	kv, err := s.bucket(ctx, s.ixBucket(), "sessionlog session index (rebuildable)", s.stream.CachedInfo().Config.Replicas)
	if err != nil {
		return nil, err
	}
	s.ixKV = kv
	if m, err := s.ixGet(ctx, ixBuilt); err == nil && string(m.Data) == ixVersion {
		return kv, nil
	}
	s.cfg.hc.Logger.Info("session index missing or of another layout: building it", "bucket", s.ixBucket())
	if err := s.ixBuild(ctx, kv); err != nil {
		return nil, err
	}
	return kv, nil
}

// ixReadOnly opens the index of a read-only store, which builds nothing:
// ErrNoIndex when there is none whole.
func (s *Store) ixReadOnly(ctx context.Context) (natsjs.KeyValue, error) {
	var kv natsjs.KeyValue
	err := s.do(ctx, "session index", func(ctx context.Context) error {
		var err error
		kv, err = s.js.KeyValue(ctx, s.ixBucket())
		return err
	})
	if err == nil {
		s.ixMu.Lock()
		s.ixKV = kv
		s.ixMu.Unlock()
		var m *natsjs.RawStreamMsg
		if m, err = s.ixGet(ctx, ixBuilt); err == nil && string(m.Data) == ixVersion {
			return kv, nil
		}
	}
	if err == nil || errors.Is(err, natsjs.ErrKeyNotFound) || ixGone(err) {
		return nil, fmt.Errorf("%w: bucket %s is missing or of another layout, and a read-only store builds none (RebuildIndex, or any query through a store that may write, builds it)", ErrNoIndex, s.ixBucket())
	}
	return nil, err
}

// RebuildIndex writes the session index again from the stream: an entry
// for every session on it. The index finds by itself a bucket or an entry
// that is missing, damaged or stale; not a session put on the stream by
// other means than a store (docs/distributed.md), which this adds.
func (s *Store) RebuildIndex(ctx context.Context) error {
	if s.cfg.readOnly {
		return readOnlyErr("rebuild the session index")
	}
	kv, err := s.ix(ctx)
	if err != nil {
		return err
	}
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	return s.ixBuild(ctx, kv)
}

// ixGone reports an error saying the index bucket is gone.
func ixGone(err error) bool {
	var ae *natsjs.APIError
	return errors.Is(err, natsjs.ErrBucketNotFound) || errors.Is(err, natsjs.ErrStreamNotFound) ||
		(errors.As(err, &ae) && ae.ErrorCode == natsjs.JSErrCodeStreamNotFound)
}

// ixBuild writes an entry for every session on the stream, then the built
// mark, each under the session's w. mark. A session created meanwhile
// writes its own; one deleted meanwhile is left with an entry the next
// answer removes. One Stat cannot describe keeps its mark: every answer
// describes it.
func (s *Store) ixBuild(ctx context.Context, kv natsjs.KeyValue) error {
	ids, err := s.ids(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		rev, err := s.ixPutRev(ctx, kv, ixMark(id), nil)
		if err != nil {
			return err
		}
		last, err := s.lastMsg(ctx, s.Subject(id))
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			s.ixPurge(ctx, kv, ixMark(id), rev)
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		var described *handle.Info
		if info, err := s.stat(ctx, id); err == nil {
			described = &info
		}
		hdr, sealed := eventlog.Header{}, true
		if described != nil {
			hdr, sealed = described.Header, described.Sealed
		} else if first, err := s.firstMsg(ctx, s.Subject(id)); err == nil {
			h, sl, herr := s.headerOf(id, first.Data)
			hdr, sealed = h, sl != nil || herr != nil
		}
		if err := s.ixKeys(ctx, kv, id, hdr, sealed); err != nil {
			return err
		}
		if err := s.ixWrite(ctx, kv, id, described, last.Sequence, rev); err != nil {
			return err
		}
	}
	return s.ixPut(ctx, kv, ixBuilt, []byte(ixVersion))
}

// ixKeys writes session id's label, parent and sealed keys.
func (s *Store) ixKeys(ctx context.Context, kv natsjs.KeyValue, id string, hdr eventlog.Header, sealed bool) error {
	if sealed {
		if err := s.ixPut(ctx, kv, "z."+id, nil); err != nil {
			return err
		}
	} else {
		for k, v := range hdr.Labels {
			if err := s.ixPut(ctx, kv, ixLabel(k, v)+id, nil); err != nil {
				return err
			}
		}
	}
	if hdr.Parent != nil && eventlog.ValidID(hdr.Parent.ID) {
		return s.ixPut(ctx, kv, "p."+hdr.Parent.ID+"."+id, nil)
	}
	return nil
}

// ixCreating writes the mark, keys and entry of a session about to be
// created, under its lease (building the index first when it is missing).
func (s *Store) ixCreating(ctx context.Context, hdr eventlog.Header, sealed bool) error {
	kv, err := s.ix(ctx)
	if err == nil {
		err = s.ixPut(ctx, kv, ixMark(hdr.ID), nil)
	}
	if err == nil {
		err = s.ixKeys(ctx, kv, hdr.ID, hdr, sealed)
	}
	if err == nil {
		var val []byte
		if val, err = json.Marshal(ixEntry{}); err == nil {
			err = s.ixPut(ctx, kv, ixKey(hdr.ID), val)
		}
	}
	if err != nil {
		return fmt.Errorf("jetstream: session index: %w", err)
	}
	return nil
}

// ixRemove removes session id's entry and keys, after its subject was
// purged (best effort: an entry left is removed by the next answer that
// finds the subject empty and no writer holding it).
func (s *Store) ixRemove(ctx context.Context, id string, hdr *eventlog.Header) {
	ctx = context.WithoutCancel(ctx)
	s.ixMu.Lock()
	kv := s.ixKV
	s.ixMu.Unlock()
	if kv == nil {
		return
	}
	var was ixEntry
	if m, err := s.ixGet(ctx, ixKey(id)); err == nil {
		json.Unmarshal(m.Data, &was)
	}
	keys := []string{ixKey(id), "z." + id}
	if was.Info != nil {
		keys = append(keys, ixLeaf(was.Info.LastActive(), id))
	}
	if hdr != nil {
		for k, v := range hdr.Labels {
			keys = append(keys, ixLabel(k, v)+id)
		}
		if hdr.Parent != nil {
			keys = append(keys, "p."+hdr.Parent.ID+"."+id)
		}
	}
	for _, k := range append(keys, ixMark(id)) {
		s.ixPurge(ctx, kv, k, 0)
	}
}

// ixDropKey removes a key that no longer says something true (best
// effort: a stale key costs a look, never a wrong answer).
func (s *Store) ixDropKey(ctx context.Context, key string) {
	s.ixMu.Lock()
	kv := s.ixKV
	s.ixMu.Unlock()
	if kv != nil {
		s.ixPurge(ctx, kv, key, 0)
	}
}

// ixSettle writes session id's entry and leaf as its log now is and
// drops its mark, by its writer before it lets go (best effort: a mark
// left behind makes answers describe the session until one settles it).
// A session whose subject is empty (a CreateFrom undone) is left alone.
func (s *Store) ixSettle(ctx context.Context, id string) {
	s.ixMu.Lock()
	kv := s.ixKV
	s.ixMu.Unlock()
	if kv == nil {
		return
	}
	last, err := s.lastMsg(ctx, s.Subject(id))
	if err != nil {
		return
	}
	info, err := s.stat(ctx, id)
	if err != nil {
		return
	}
	if err := s.ixWrite(ctx, kv, id, &info, last.Sequence, 0); err != nil {
		s.cfg.hc.Logger.Debug("writing a session's index entry failed; the next answer does", "id", id, "err", err)
	}
}

// ixPut puts key through transient failures.
func (s *Store) ixPut(ctx context.Context, kv natsjs.KeyValue, key string, val []byte) error {
	_, err := s.ixPutRev(ctx, kv, key, val)
	return err
}

// ixPutRev puts key and returns its revision; a read-only store refuses.
func (s *Store) ixPutRev(ctx context.Context, kv natsjs.KeyValue, key string, val []byte) (uint64, error) {
	if s.cfg.readOnly {
		return 0, readOnlyErr("write the session index")
	}
	var rev uint64
	err := s.do(ctx, "session index", func(ctx context.Context) error {
		var err error
		rev, err = kv.Put(ctx, key, val)
		return err
	})
	return rev, err
}

// ixGet reads key from the bucket's leader (a replica may lag behind an
// entry written before a session's first message): natsjs.ErrKeyNotFound
// when it is missing or deleted.
func (s *Store) ixGet(ctx context.Context, key string) (*natsjs.RawStreamMsg, error) {
	var m *natsjs.RawStreamMsg
	err := s.do(ctx, "session index", func(ctx context.Context) error {
		var err error
		m, err = s.leaderGet(ctx, "KV_"+s.ixBucket(), msgGetReq{LastFor: "$KV." + s.ixBucket() + "." + key})
		return err
	})
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return nil, natsjs.ErrKeyNotFound
	}
	if err != nil {
		return nil, err
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		return nil, natsjs.ErrKeyNotFound
	}
	return m, nil
}

// ixRef is an entry as read: its session, revision and value.
type ixRef struct {
	id  string
	rev uint64
	val []byte
	// marked: a writer holds the session's w. mark, and writes its entry
	// as it closes (describe writes nothing back).
	marked bool
}

// ixEntries returns the entries whose keys match filter, from one
// listing of them.
func (s *Store) ixEntries(ctx context.Context, kv natsjs.KeyValue, filter string) ([]ixRef, error) {
	ents, err := s.ixList(ctx, kv, filter)
	if err != nil {
		return nil, err
	}
	out := make([]ixRef, 0, len(ents))
	for _, e := range ents {
		id := strings.ReplaceAll(strings.TrimPrefix(e.Key(), "s."), ".", "")
		out = append(out, ixRef{id: id, rev: e.Revision(), val: e.Value()})
	}
	return out, nil
}

// ixIDs returns the last token of every key filter matches (a secondary
// key's session), from one listing of them.
func (s *Store) ixIDs(ctx context.Context, kv natsjs.KeyValue, filter string) ([]string, error) {
	var out []string
	err := s.do(ctx, "session index", func(ctx context.Context) error {
		out = out[:0]
		l, err := kv.ListKeysFiltered(ctx, filter)
		if err != nil {
			return err
		}
		defer l.Stop()
		for k := range l.Keys() {
			out = append(out, k[strings.LastIndexByte(k, '.')+1:])
		}
		return nil
	})
	return out, err
}

// ixEntry reads session id's entry: ok is false when there is none.
func (s *Store) ixEntry(ctx context.Context, id string) (ixRef, bool, error) {
	m, err := s.ixGet(ctx, ixKey(id))
	if errors.Is(err, natsjs.ErrKeyNotFound) {
		return ixRef{}, false, nil
	}
	if err != nil {
		return ixRef{}, false, err
	}
	return ixRef{id: id, rev: m.Sequence, val: m.Data}, true, nil
}

// describe answers for the session of entry r: its Info when the entry
// still describes its subject (the last message is the one it names),
// else Stat's, written back; present is false when the subject holds no
// session (the entry is then removed unless a writer holds the session:
// a create under way). A session Stat cannot describe is err.
func (s *Store) describe(ctx context.Context, kv natsjs.KeyValue, r ixRef) (handle.Info, bool, error) {
	var e ixEntry
	if !eventlog.ValidID(r.id) {
		return handle.Info{}, false, nil
	}
	damaged := json.Unmarshal(r.val, &e) != nil
	s.looks.Add(1)
	last, err := s.lastMsg(ctx, s.Subject(r.id))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		// Absent. The entry goes only if, after its revision was read,
		// no writer held the lease and then the subject was still empty:
		// a create holding the lease then has published, or rewrote the
		// entry after that read (a new revision: the removal fails).
		if !s.cfg.readOnly && s.unheldEmpty(ctx, r.id) {
			s.ixPurge(ctx, kv, ixKey(r.id), r.rev)
		}
		return handle.Info{}, false, nil
	}
	if !damaged && e.Info != nil && e.SS == last.Sequence && e.Info.ID == r.id {
		return *e.Info, true, nil
	}
	info, err := s.stat(ctx, r.id)
	if errors.Is(err, handle.ErrNotFound) {
		return handle.Info{}, false, nil // deleted meanwhile, or being built
	}
	if err != nil {
		return handle.Info{}, false, err
	}
	ne := ixEntry{SS: last.Sequence}
	if !info.Sealed {
		ne.Info = &info
	}
	if s.cfg.readOnly || r.marked {
		return info, true, nil
	}
	if val, err := json.Marshal(ne); err == nil && (damaged || ne.SS != e.SS || ne.Info != nil) {
		// The leaf before the entry that names it; the old one after.
		if ne.Info != nil && s.ixPlace(ctx, kv, r.id, info.LastActive()) != nil {
			return info, true, nil
		}
		_, err := kv.Update(ctx, ixKey(r.id), val, r.rev) // best effort: a newer one stands
		if err == nil && !damaged && e.Info != nil && (ne.Info == nil || e.Info.LastActive() != info.LastActive()) {
			s.ixPurge(ctx, kv, ixLeaf(e.Info.LastActive(), r.id), 0)
		}
	}
	return info, true, nil
}

// candidates returns the entries that may answer q: those its most
// selective filter names (a parent, a label, an ID prefix), else all.
func (s *Store) candidates(ctx context.Context, kv natsjs.KeyValue, parent string, labels map[string]string, prefix string) ([]ixRef, error) {
	if len(prefix) > 26 || !eventlog.ValidID(prefix+strings.Repeat("0", 26-len(prefix))) {
		return nil, nil // no ID starts so (and no wildcard gets into a filter)
	}
	var ids []string
	var err error
	switch {
	case eventlog.ValidID(parent):
		ids, err = s.ixIDs(ctx, kv, "p."+parent+".*")
	case len(labels) > 0:
		ks := make([]string, 0, len(labels))
		for k := range labels {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		if ids, err = s.ixIDs(ctx, kv, ixLabel(ks[0], labels[ks[0]])+"*"); err == nil {
			var sealed []string
			sealed, err = s.ixIDs(ctx, kv, "z.*")
			ids = append(ids, sealed...)
		}
	case len(prefix) == 26:
		ids = []string{prefix}
	case prefix != "":
		return s.ixEntries(ctx, kv, ixKey(prefix)+".>")
	default:
		return s.ixEntries(ctx, kv, "s.>")
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []ixRef
	for _, id := range ids {
		if !strings.HasPrefix(id, prefix) {
			continue
		}
		r, ok, err := s.ixEntry(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// describeAll describes the sessions of refs: those absent are left out,
// those Stat cannot describe given to broken (nil: the error is returned).
func (s *Store) describeAll(ctx context.Context, kv natsjs.KeyValue, refs []ixRef, broken func(string, error)) ([]handle.Info, error) {
	var out []handle.Info
	for _, r := range refs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info, ok, err := s.describe(ctx, kv, r)
		switch {
		case err != nil && broken != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
			broken(r.id, err)
		case err != nil:
			return nil, err
		case ok:
			out = append(out, info)
		}
	}
	return out, nil
}

// List is Store.List for q: the candidates its filters select, each
// checked against its subject.
func (x jsIndex) List(ctx context.Context, q handle.ListQuery) ([]handle.Info, error) {
	kv, err := x.s.ix(ctx)
	if err != nil {
		return nil, err
	}
	if q.ByActivity && q.Limit > 0 && q.Parent == "" && q.Prefix == "" && len(q.Labels) == 0 {
		return x.s.page(ctx, kv, q)
	}
	refs, err := x.s.candidates(ctx, kv, q.Parent, q.Labels, q.Prefix)
	if err != nil {
		return nil, err
	}
	if q.ByActivity && q.Limit > 0 {
		return x.s.pageOf(ctx, kv, refs, q)
	}
	infos, err := x.s.describeAll(ctx, kv, refs, q.Broken)
	if err != nil {
		return nil, err
	}
	infos = slices.DeleteFunc(infos, func(i handle.Info) bool { return !q.Keeps(i) })
	return q.Page(infos), nil
}

// Children returns the sessions whose parent is id, from its parent keys.
func (x jsIndex) Children(ctx context.Context, id string) ([]handle.Info, error) {
	kv, err := x.s.ix(ctx)
	if err != nil {
		return nil, err
	}
	refs, err := x.s.candidates(ctx, kv, id, nil, "")
	if err != nil {
		return nil, err
	}
	infos, err := x.s.describeAll(ctx, kv, refs, func(string, error) {})
	if err != nil {
		return nil, err
	}
	var out []handle.Info
	for _, in := range infos {
		if p := in.Header.Parent; p != nil && p.ID == id {
			out = append(out, handle.Info{ID: in.ID, Path: in.Path, Header: in.Header})
		}
	}
	slices.SortFunc(out, func(a, b handle.Info) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Header returns session id's header, from its entry.
func (x jsIndex) Header(ctx context.Context, id string) (eventlog.Header, bool, error) {
	kv, err := x.s.ix(ctx)
	if err != nil {
		return eventlog.Header{}, false, err
	}
	r, ok, err := x.s.ixEntry(ctx, id)
	if err != nil || !ok {
		return eventlog.Header{}, false, err
	}
	info, ok, err := x.s.describe(ctx, kv, r)
	if err != nil || !ok {
		return eventlog.Header{}, false, nil // absent or unreadable
	}
	return info.Header, true, nil
}

// Older returns the sessions last active before cutoff and the forks of
// each: the marked sessions, the leaves up to cutoff, the parent keys of
// those old.
func (x jsIndex) Older(ctx context.Context, cutoff int64) ([]handle.Info, map[string][]string, error) {
	kv, err := x.s.ix(ctx)
	if err != nil {
		return nil, nil, err
	}
	return x.s.older(ctx, kv, cutoff)
}
