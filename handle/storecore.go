package handle

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/logfile"
)

// storeCore is the store core: Store over a StoreBackend. What a store
// decides is here, once; what its engine does is the backend's.
type storeCore struct {
	b   StoreBackend
	ids *idSource
	now func() time.Time
}

var _ Store = (*storeCore)(nil)

func newStoreCore(b StoreBackend, now func() time.Time) *storeCore {
	return &storeCore{b: b, ids: newIDSource(), now: now}
}

// tailOpener is the backend that has a cheaper Tail than a read-only
// handle (see StoreBackend).
type tailOpener interface {
	OpenTail(ctx context.Context, id string) (Tail, error)
}

// checked returns ctx's error, else id's (ErrInvalidID).
func checked(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return checkID(id)
}

func (c *storeCore) Create(ctx context.Context, opts ...CreateOption) (Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ns, err := c.newSession(ctx, opts)
	if err != nil {
		return nil, err
	}
	return c.b.Create(ctx, ns)
}

func (c *storeCore) CreateFrom(ctx context.Context, events iter.Seq2[eventlog.Event, error], opts ...CreateOption) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	ns, err := c.newSession(ctx, opts)
	if err != nil {
		return Info{}, err
	}
	return c.b.CreateFrom(ctx, ns, events)
}

// newSession applies the options of a Create or CreateFrom: the new
// session's header, its ID checked (or a new one), and its parent found
// to hold the fork or spawn point.
func (c *storeCore) newSession(ctx context.Context, opts []CreateOption) (NewSession, error) {
	var cc createConfig
	for _, o := range opts {
		o(&cc)
	}
	id := cc.id
	if !cc.idSet {
		var err error
		if id, err = c.ids.New(c.now()); err != nil {
			return NewSession{}, err
		}
	}
	if err := checkID(id); err != nil {
		return NewSession{}, err
	}
	ns := NewSession{Encoding: cc.encoding, Unredacted: cc.unredacted, Sealed: cc.sealSet || cc.sealAs != nil, opts: cc}
	if p := cc.parent; p != nil {
		info, err := c.Stat(ctx, p.ID)
		if err != nil {
			return NewSession{}, fmt.Errorf("handle: create with parent %s: %w", p.ID, err)
		}
		if p.Seq > info.LastSeq {
			return NewSession{}, fmt.Errorf("%w: parent %s has no event %d (it %s)", ErrLineage, p.ID, p.Seq, holdsWords(info.LastSeq))
		}
		ns.Parent = &info
	}
	ns.Header = logfile.NewHeader(id, c.now().UnixMilli())
	if cc.createdAt != nil {
		ns.Header.CreatedAt = *cc.createdAt
	}
	ns.Header.Labels, ns.Header.Parent = cc.labels, cc.parent
	return ns, nil
}

func (c *storeCore) AppendAll(ctx context.Context, id string, expected int64, events iter.Seq2[eventlog.Event, error]) (Info, error) {
	return appendAll(ctx, c, id, expected, events)
}

func (c *storeCore) Open(ctx context.Context, id string, mode Mode, opts ...OpenOption) (Handle, error) {
	if err := checked(ctx, id); err != nil {
		return nil, err
	}
	var op OpenParams
	for _, o := range opts {
		o(&op)
	}
	return c.b.Open(ctx, id, mode, op)
}

func (c *storeCore) Stat(ctx context.Context, id string) (Info, error) {
	if err := checked(ctx, id); err != nil {
		return Info{}, err
	}
	return c.b.Stat(ctx, id)
}

func (c *storeCore) OpenTail(ctx context.Context, id string) (Tail, error) {
	if err := checked(ctx, id); err != nil {
		return nil, err
	}
	if t, ok := c.b.(tailOpener); ok {
		return t.OpenTail(ctx, id)
	}
	info, err := c.b.Stat(ctx, id)
	if err != nil {
		return nil, err
	}
	h, err := c.b.Open(ctx, id, ReadOnly, OpenParams{})
	if err != nil {
		return nil, err
	}
	return handleTail{h, info}, nil
}

// indexer is a StoreBackend that answers the questions that look across
// sessions from an index it keeps (the file store's; docs/design.md, "The
// session index"), at a cost that grows with the answer.
type indexer interface {
	// indexList is List, for lc.
	indexList(ctx context.Context, lc listConfig) ([]Info, error)
	// indexChildren returns the ID and header of every session whose
	// header names id as its parent, sorted by ID.
	indexChildren(ctx context.Context, id string) ([]Info, error)
	// indexHeader returns session id's header; ok is false when absent
	// or unreadable.
	indexHeader(ctx context.Context, id string) (hdr eventlog.Header, ok bool, err error)
	// indexOlder returns the sessions last active before cutoff (ms),
	// leaving out those that cannot be described, and the forks of each
	// (sorted IDs), from one reading of the index.
	indexOlder(ctx context.Context, cutoff int64) ([]Info, map[string][]string, error)
}

// List describes the sessions, each as Stat does, newest first.
func (c *storeCore) List(ctx context.Context, opts ...ListOption) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var lc listConfig
	for _, o := range opts {
		o(&lc)
	}
	if ix, ok := c.b.(indexer); ok {
		return ix.indexList(ctx, lc)
	}
	ids, err := c.b.IDs(ctx)
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(id, lc.prefix) {
			continue
		}
		info, err := c.b.Stat(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // deleted meanwhile
		case err != nil && lc.broken != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
			lc.broken(id, err)
			continue
		case err != nil:
			return nil, err
		}
		if lc.matchInfo(info) {
			out = append(out, info)
		}
	}
	return lc.finish(out), nil
}

func (c *storeCore) Fork(ctx context.Context, id string, at int64, opts ...CreateOption) (Handle, error) {
	info, err := c.Stat(ctx, id)
	if err != nil {
		return nil, err
	}
	if at < 0 || at > info.LastSeq {
		return nil, fmt.Errorf("%w: cannot fork %s at seq %d: it %s", ErrLineage, info.ID, at, holdsWords(info.LastSeq))
	}
	opts = append(slices.Clone(opts), WithParent(eventlog.Parent{ID: info.ID, Seq: at, Mode: eventlog.ModeFork}))
	return c.Create(ctx, opts...)
}

func (c *storeCore) Delete(ctx context.Context, id string, opts ...DeleteOption) error {
	var dc deleteConfig
	for _, o := range opts {
		o(&dc)
	}
	return c.delete(ctx, id, dc, map[string]bool{})
}

func (c *storeCore) delete(ctx context.Context, id string, dc deleteConfig, visited map[string]bool) error {
	if err := checked(ctx, id); err != nil {
		return err
	}
	if err := c.b.Exists(ctx, id); err != nil {
		return err
	}
	if visited[id] {
		return fmt.Errorf("%w: %s is its own ancestor", ErrLineage, id)
	}
	visited[id] = true
	// The writer's hold first: a Delete refused because a writer holds the
	// session must not have detached or deleted its forks already.
	release, err := c.b.Hold(ctx, id)
	if err != nil {
		return err
	}
	defer release()
	deps, err := c.dependents(ctx, id)
	if err != nil {
		return err
	}
	for _, dep := range deps {
		switch {
		case dc.cascade:
			err = c.delete(ctx, dep, dc, visited)
		case dc.detach:
			err = c.Detach(ctx, dep)
		default:
			return &DependentsError{ID: id, Dependents: deps}
		}
		if err != nil {
			return err
		}
	}
	return c.b.Remove(ctx, id)
}

func (c *storeCore) Detach(ctx context.Context, id string) error {
	if err := checked(ctx, id); err != nil {
		return err
	}
	if err := c.b.Exists(ctx, id); err != nil {
		return err
	}
	release, err := c.b.Hold(ctx, id)
	if err != nil {
		return err
	}
	defer release()
	h, err := c.b.Open(ctx, id, ReadOnly, OpenParams{})
	if err != nil {
		return err
	}
	defer h.Close()
	hdr := h.Header()
	if hdr.Parent == nil || hdr.Parent.Mode != eventlog.ModeFork {
		return nil // stands alone already
	}
	hdr.Parent = nil
	return c.b.Replace(ctx, id, hdr, h.Read(ctx, 0, End))
}

func (c *storeCore) Dependents(ctx context.Context, id string) ([]string, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	return c.dependents(ctx, id)
}

// dependents returns the forks whose parent is id, sorted. Children
// (mode child) do not depend on their parent.
func (c *storeCore) dependents(ctx context.Context, id string) ([]string, error) {
	var infos []Info
	var err error
	if ix, ok := c.b.(indexer); ok {
		infos, err = ix.indexChildren(ctx, id)
	} else {
		infos, err = c.b.Headers(ctx)
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, in := range infos {
		if p := in.Header.Parent; p != nil && p.ID == id && p.Mode == eventlog.ModeFork {
			out = append(out, in.ID)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (c *storeCore) WriterHeld(ctx context.Context, id string) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	return c.b.WriterHeld(ctx, id)
}

func (c *storeCore) GC(ctx context.Context, before time.Time, dryRun bool) (GCReport, error) {
	var rep GCReport
	var live map[string]int64
	var err error
	ix, indexed := c.b.(indexer)
	if indexed {
		rep, err = collectIndexed(ctx, c, ix, before, dryRun)
	} else {
		rep, live, err = collect(ctx, c, before, dryRun)
	}
	if err != nil {
		return rep, err
	}
	gone := map[string]bool{}
	for _, id := range rep.Deleted {
		gone[id] = true
	}
	keep := func(id string) bool {
		_, listed := live[id]
		return (listed || indexed) && !gone[id]
	}
	rep.Leftovers, err = c.b.Leftovers(ctx, before, keep, dryRun)
	return rep, err
}

func (c *storeCore) Tree(ctx context.Context) ([]*Node, error) {
	infos, err := c.b.Headers(ctx)
	if err != nil {
		return nil, err
	}
	return treeOf(infos), nil
}

func (c *storeCore) Children(ctx context.Context, id string) ([]eventlog.Header, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	var infos []Info
	var err error
	if ix, ok := c.b.(indexer); ok {
		infos, err = ix.indexChildren(ctx, id)
	} else {
		infos, err = c.b.Headers(ctx)
	}
	if err != nil {
		return nil, err
	}
	var out []eventlog.Header
	for _, in := range infos {
		if p := in.Header.Parent; p != nil && p.ID == id {
			out = append(out, in.Header)
		}
	}
	slices.SortFunc(out, func(a, b eventlog.Header) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (c *storeCore) Ancestors(ctx context.Context, id string) (chain []eventlog.Header, gone string, err error) {
	if err := checkID(id); err != nil {
		return nil, "", err
	}
	if ix, ok := c.b.(indexer); ok {
		return c.indexAncestors(ctx, ix, id)
	}
	infos, err := c.b.Headers(ctx)
	if err != nil {
		return nil, "", err
	}
	byID := make(map[string]eventlog.Header, len(infos))
	for _, in := range infos {
		byID[in.Header.ID] = in.Header
	}
	cur, ok := byID[id]
	if !ok {
		return nil, "", fmt.Errorf("%w: %s in %s", ErrNotFound, id, c.b.Where())
	}
	for cur.Parent != nil && len(chain) < maxForkDepth {
		p, ok := byID[cur.Parent.ID]
		if !ok {
			return chain, cur.Parent.ID, nil
		}
		chain = append(chain, p)
		cur = p
	}
	return chain, "", nil
}

func (c *storeCore) GetDerived(ctx context.Context, id, key string) ([]byte, error) {
	if err := checked(ctx, id); err != nil {
		return nil, err
	}
	return c.b.GetDerived(ctx, id, key)
}

func (c *storeCore) PutDerived(ctx context.Context, id, key string, data []byte) error {
	if err := checked(ctx, id); err != nil {
		return err
	}
	return c.b.PutDerived(ctx, id, key, data)
}

func (c *storeCore) DeleteDerived(ctx context.Context, id, key string) error {
	if err := checked(ctx, id); err != nil {
		return err
	}
	return c.b.DeleteDerived(ctx, id, key)
}

// handleTail is the Tail of a store without a cheaper one: a read-only
// handle h and what Stat said of its session just before h was opened (so
// that h holds at least info's events). Seq is info's, as a TailReader's
// is what Stat found.
type handleTail struct {
	Handle
	info Info
}

func (t handleTail) Seq() int64 { return t.info.LastSeq }
func (t handleTail) Info() Info { return t.info }

// indexAncestors is Ancestors from an index: one look-up a level.
func (c *storeCore) indexAncestors(ctx context.Context, ix indexer, id string) (chain []eventlog.Header, gone string, err error) {
	cur, ok, err := ix.indexHeader(ctx, id)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", fmt.Errorf("%w: %s in %s", ErrNotFound, id, c.b.Where())
	}
	for cur.Parent != nil && len(chain) < maxForkDepth {
		p, ok, err := ix.indexHeader(ctx, cur.Parent.ID)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return chain, cur.Parent.ID, nil
		}
		chain = append(chain, p)
		cur = p
	}
	return chain, "", nil
}
