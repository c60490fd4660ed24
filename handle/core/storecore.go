package core

import (
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/internal/lineage"
	"github.com/sessionlog/sessionlog/internal/format/logfile"

	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Core is the store core: Store over a StoreBackend. What a store
// decides is here, once; what its engine does is the backend's.
type Store struct {
	b   StoreBackend
	ids *idSource
	cfg handle.Config
}

var _ handle.Store = (*Store)(nil)

func newStoreCore(b StoreBackend, cfg handle.Config) *Store {
	return &Store{b: b, ids: newIDSource(), cfg: cfg}
}

func (c *Store) now() time.Time { return c.cfg.Now() }

// checked returns ctx's error, else id's (ErrInvalidID).
func checked(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return checkID(id)
}

func (c *Store) Create(ctx context.Context, opts ...handle.Option) (handle.Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := c.cfg.With(opts...)
	ns, err := c.newSession(ctx, cfg)
	if err != nil {
		return nil, err
	}
	b, hc, err := c.b.Create(ctx, ns)
	if err != nil {
		return nil, err
	}
	return c.wrap(b, hc, cfg), nil
}

// wrap is the write core over b, for the store core: the session as the
// backend described it (hc), the handle's settings as cfg says.
func (c *Store) wrap(b Backend, hc HandleConfig, cfg handle.Config) *writeCore {
	hc.Store = c
	hc.Policy, hc.Redactor, hc.Logger, hc.Ticker = cfg.Policy, cfg.Redactor, cfg.Logger, cfg.Ticker
	return newCore(b, hc)
}

// open is Open for the store core's own use: the write core's handle.
func (c *Store) open(ctx context.Context, id string, mode handle.Mode, cfg handle.Config) (*writeCore, error) {
	if err := checked(ctx, id); err != nil {
		return nil, err
	}
	b, hc, err := c.b.Open(ctx, id, mode)
	if err != nil {
		return nil, err
	}
	return c.wrap(b, hc, cfg), nil
}

func (c *Store) CreateFrom(ctx context.Context, events iter.Seq2[eventlog.Event, error], opts ...handle.Option) (handle.Info, error) {
	if err := ctx.Err(); err != nil {
		return handle.Info{}, err
	}
	ns, err := c.newSession(ctx, c.cfg.With(opts...))
	if err != nil {
		return handle.Info{}, err
	}
	check := &eventCheck{path: ns.Header.ID, next: ns.Header.FirstSeq()}
	if p := ns.Header.Parent; p != nil && p.Mode == eventlog.ModeFork {
		check.prefix = func() (*eventlog.Digest, error) { return c.digestAt(ctx, *p) }
	}
	info, err := c.b.CreateFrom(ctx, ns, check.events(ctx, events))
	if err != nil {
		if check.err != nil {
			return handle.Info{}, check.err // a refused event, the events' own error, ctx's
		}
		return handle.Info{}, err
	}
	if check.dig != nil && check.index > 0 {
		saveDigests(ctx, c, ns.Header.ID, c.cfg.Logger, check.dig, &check.last, check.marks)
	}
	// Told, not read back: once the session exists CreateFrom must not fail.
	return check.info(info), nil
}

// digestAt returns the running digest of the logical log of parent p.ID
// up to and including seq p.Seq: where a fork at p starts its own.
func (c *Store) digestAt(ctx context.Context, p eventlog.Parent) (*eventlog.Digest, error) {
	h, err := c.open(ctx, p.ID, handle.ReadOnly, c.cfg)
	if err != nil {
		return nil, fmt.Errorf("handle: the digest of parent %s at seq %d: %w", p.ID, p.Seq, err)
	}
	defer h.Close()
	return h.digestUpTo(ctx, p.Seq, 0)
}

// newSession applies the options of a Create or CreateFrom: the new
// session's header, its ID checked (or a new one), and its parent found
// to hold the fork or spawn point.
func (c *Store) newSession(ctx context.Context, cfg handle.Config) (NewSession, error) {
	cc := cfg
	var id string
	if cc.ID != nil {
		id = *cc.ID
	} else {
		var err error
		if id, err = c.ids.New(cfg.Now()); err != nil {
			return NewSession{}, err
		}
	}
	if err := checkID(id); err != nil {
		return NewSession{}, err
	}
	ns := NewSession{Encoding: cfg.Encoding, Sealed: cfg.Recipients != nil || cc.SealAs != nil, SealFor: cfg.Recipients, SealAs: cc.SealAs}
	if p := cc.Parent; p != nil {
		info, err := c.Stat(ctx, p.ID)
		if err != nil {
			return NewSession{}, fmt.Errorf("handle: create with parent %s: %w", p.ID, err)
		}
		if p.Seq > info.LastSeq {
			return NewSession{}, fmt.Errorf("%w: parent %s has no event %d (it %s)", handle.ErrLineage, p.ID, p.Seq, holdsWords(info.LastSeq))
		}
		ns.Parent = &info
	}
	ns.Header = logfile.NewHeader(id, cfg.Now().UnixMilli())
	if cc.CreatedAt != nil {
		ns.Header.CreatedAt = *cc.CreatedAt
	}
	ns.Header.Labels, ns.Header.Parent = cc.Labels, cc.Parent
	return ns, nil
}

func (c *Store) AppendAll(ctx context.Context, id string, expected int64, events iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	return appendAll(ctx, c, id, expected, events)
}

func (c *Store) Open(ctx context.Context, id string, mode handle.Mode, opts ...handle.Option) (handle.Handle, error) {
	h, err := c.open(ctx, id, mode, c.cfg.With(opts...))
	if err != nil {
		return nil, err // no typed nil in the interface
	}
	return h, nil
}

func (c *Store) Stat(ctx context.Context, id string) (handle.Info, error) {
	if err := checked(ctx, id); err != nil {
		return handle.Info{}, err
	}
	return c.b.Stat(ctx, id)
}

func (c *Store) OpenTail(ctx context.Context, id string) (handle.Tail, error) {
	if err := checked(ctx, id); err != nil {
		return nil, err
	}
	if t, err := c.b.OpenTail(ctx, id); !errors.Is(err, errors.ErrUnsupported) {
		return t, err
	}
	info, err := c.b.Stat(ctx, id)
	if err != nil {
		return nil, err
	}
	h, err := c.open(ctx, id, handle.ReadOnly, c.cfg)
	if err != nil {
		return nil, err
	}
	return handleTail{h, info}, nil
}

// List describes the sessions, each as Stat does, newest first.
func (c *Store) List(ctx context.Context, opts ...handle.Option) ([]handle.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lc := c.cfg.With(opts...).List
	if ix := c.b.Index(); ix != nil {
		return ix.List(ctx, lc)
	}
	ids, err := c.b.IDs(ctx)
	if err != nil {
		return nil, err
	}
	var out []handle.Info
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(id, lc.Prefix) {
			continue
		}
		info, err := c.b.Stat(ctx, id)
		switch {
		case errors.Is(err, handle.ErrNotFound):
			continue // deleted meanwhile
		case err != nil && lc.Broken != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
			lc.Broken(id, err)
			continue
		case err != nil:
			return nil, err
		}
		if lc.Keeps(info) {
			out = append(out, info)
		}
	}
	return lc.Page(out), nil
}

func (c *Store) Fork(ctx context.Context, id string, at int64, opts ...handle.Option) (handle.Handle, error) {
	info, err := c.Stat(ctx, id)
	if err != nil {
		return nil, err
	}
	if at < 0 || at > info.LastSeq {
		return nil, fmt.Errorf("%w: cannot fork %s at seq %d: it %s", handle.ErrLineage, info.ID, at, holdsWords(info.LastSeq))
	}
	opts = append(slices.Clone(opts), handle.WithParent(eventlog.Parent{ID: info.ID, Seq: at, Mode: eventlog.ModeFork}))
	return c.Create(ctx, opts...)
}

func (c *Store) Delete(ctx context.Context, id string, opts ...handle.Option) error {
	return c.delete(ctx, id, c.cfg.With(opts...), map[string]bool{})
}

func (c *Store) delete(ctx context.Context, id string, dc handle.Config, visited map[string]bool) error {
	if err := checked(ctx, id); err != nil {
		return err
	}
	if err := c.b.Exists(ctx, id); err != nil {
		return err
	}
	if visited[id] {
		return fmt.Errorf("%w: %s is its own ancestor", handle.ErrLineage, id)
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
		case dc.Cascade:
			err = c.delete(ctx, dep, dc, visited)
		case dc.Detach:
			err = c.Detach(ctx, dep)
		default:
			return &handle.DependentsError{ID: id, Dependents: deps}
		}
		if err != nil {
			return err
		}
	}
	return c.b.Remove(ctx, id)
}

func (c *Store) Detach(ctx context.Context, id string) error {
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
	h, err := c.open(ctx, id, handle.ReadOnly, c.cfg)
	if err != nil {
		return err
	}
	defer h.Close()
	hdr := h.Header()
	if hdr.Parent == nil || hdr.Parent.Mode != eventlog.ModeFork {
		return nil // stands alone already
	}
	hdr.Parent = nil
	return c.b.Replace(ctx, id, hdr, h.Read(ctx, 0, handle.End))
}

func (c *Store) Dependents(ctx context.Context, id string) ([]string, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	return c.dependents(ctx, id)
}

// dependents returns the forks whose parent is id, sorted. Children
// (mode child) do not depend on their parent.
func (c *Store) dependents(ctx context.Context, id string) ([]string, error) {
	infos, err := c.childrenOf(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, in := range infos {
		if in.Header.Parent.Mode == eventlog.ModeFork {
			out = append(out, in.ID)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (c *Store) WriterHeld(ctx context.Context, id string) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	return c.b.WriterHeld(ctx, id)
}

func (c *Store) GC(ctx context.Context, before time.Time, dryRun bool) (handle.GCReport, error) {
	var rep handle.GCReport
	var live map[string]int64
	var err error
	ix := c.b.Index()
	indexed := ix != nil
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

func (c *Store) Tree(ctx context.Context) ([]*handle.Node, error) {
	infos, err := c.b.Headers(ctx)
	if err != nil {
		return nil, err
	}
	return treeOf(infos), nil
}

func (c *Store) Children(ctx context.Context, id string) ([]eventlog.Header, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	infos, err := c.childrenOf(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]eventlog.Header, len(infos))
	for i, in := range infos {
		out[i] = in.Header
	}
	slices.SortFunc(out, func(a, b eventlog.Header) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// childrenOf returns the sessions whose header names id as its parent
// (forks and children): from the index, else from every header.
func (c *Store) childrenOf(ctx context.Context, id string) ([]handle.Info, error) {
	var infos []handle.Info
	var err error
	if ix := c.b.Index(); ix != nil {
		infos, err = ix.Children(ctx, id)
	} else {
		infos, err = c.b.Headers(ctx)
	}
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(infos, func(in handle.Info) bool {
		p := in.Header.Parent
		return p == nil || p.ID != id
	}), nil
}

func (c *Store) Ancestors(ctx context.Context, id string) (chain []eventlog.Header, gone string, err error) {
	if err := checkID(id); err != nil {
		return nil, "", err
	}
	if ix := c.b.Index(); ix != nil {
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
		return nil, "", fmt.Errorf("%w: %s in %s", handle.ErrNotFound, id, c.b.Where())
	}
	for cur.Parent != nil && len(chain) < lineage.MaxDepth {
		p, ok := byID[cur.Parent.ID]
		if !ok {
			return chain, cur.Parent.ID, nil
		}
		chain = append(chain, p)
		cur = p
	}
	return chain, "", nil
}

func (c *Store) GetDerived(ctx context.Context, id, key string) ([]byte, error) {
	if err := checked(ctx, id); err != nil {
		return nil, err
	}
	return c.b.GetDerived(ctx, id, key)
}

func (c *Store) PutDerived(ctx context.Context, id, key string, data []byte) error {
	if err := checked(ctx, id); err != nil {
		return err
	}
	return c.b.PutDerived(ctx, id, key, data)
}

func (c *Store) DeleteDerived(ctx context.Context, id, key string) error {
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
	handle.Handle
	info handle.Info
}

func (t handleTail) Seq() int64        { return t.info.LastSeq }
func (t handleTail) Info() handle.Info { return t.info }

// indexAncestors is Ancestors from an index: one look-up a level.
func (c *Store) indexAncestors(ctx context.Context, ix Index, id string) (chain []eventlog.Header, gone string, err error) {
	cur, ok, err := ix.Header(ctx, id)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", fmt.Errorf("%w: %s in %s", handle.ErrNotFound, id, c.b.Where())
	}
	for cur.Parent != nil && len(chain) < lineage.MaxDepth {
		p, ok, err := ix.Header(ctx, cur.Parent.ID)
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

func (c *Store) Rewrite(ctx context.Context, id string, rows func(h handle.Handle) iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	if err := checked(ctx, id); err != nil {
		return handle.Info{}, err
	}
	release, err := c.b.Hold(ctx, id)
	if err != nil {
		return handle.Info{}, err
	}
	defer release()
	h, err := c.open(ctx, id, handle.ReadOnly, c.cfg)
	if err != nil {
		return handle.Info{}, err
	}
	defer h.Close()
	hdr := h.Header()
	check := &eventCheck{path: h.Path(), next: hdr.FirstSeq()}
	if p := hdr.Parent; p != nil && p.Mode == eventlog.ModeFork {
		check.prefix = func() (*eventlog.Digest, error) { return c.digestAt(ctx, *p) }
	}
	if err := c.b.Replace(ctx, id, hdr, check.events(ctx, rows(h))); err != nil {
		if check.err != nil {
			return handle.Info{}, check.err
		}
		return handle.Info{}, err
	}
	return c.b.Stat(ctx, id)
}

func (c *Store) Resolve(ctx context.Context, name string) (handle.Info, error) {
	return resolve(ctx, c, name)
}

func (c *Store) OpenOrCreate(ctx context.Context, labels map[string]string, opts ...handle.Option) (handle.Handle, bool, error) {
	return openOrCreate(ctx, c, labels, opts)
}

func (c *Store) OpenWhenFree(ctx context.Context, id string, wait time.Duration, waiting func()) (handle.Handle, error) {
	return openWhenFree(ctx, c, id, wait, waiting)
}

func (c *Store) TreeOf(ctx context.Context, id string) (*handle.Node, error) {
	return sessionTree(ctx, c, id)
}
