package transfer

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// Result is what one session's copy did. Its JSON is one line of logtool
// copy.
type Result struct {
	ID     string `json:"id"`
	Events int64  `json:"events"` // the session's own events (a fork's inherited ones are its parent's)
	Digest string `json:"digest"` // the log digest, the same on both sides
}

type config struct {
	ids      []string
	encoding string
}

// Option configures Copy and Session.
type Option func(*config)

// IDs copies only these sessions (every one must be in the source).
func IDs(ids ...string) Option { return func(c *config) { c.ids = ids } }

// WithEncoding stores every copy in this encoding (handle.EncodingRaw or
// handle.EncodingZstd) instead of its source's. A JetStream store keeps
// raw logs only.
func WithEncoding(encoding string) Option { return func(c *config) { c.encoding = encoding } }

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Copy copies the sessions of src to dst (all, or those of IDs), parents
// before their forks and children, each as Session does, and yields each
// result as it is done. It stops at the first failure, yielded last; the
// sessions copied before it stay copied.
func Copy(ctx context.Context, src, dst handle.Store, opts ...Option) iter.Seq2[Result, error] {
	c := newConfig(opts)
	return func(yield func(Result, error) bool) {
		infos, err := src.List(ctx)
		if err != nil {
			yield(Result{}, err)
			return
		}
		if c.ids != nil {
			infos = slices.DeleteFunc(infos, func(i handle.Info) bool { return !slices.Contains(c.ids, i.ID) })
			if missing := len(c.ids) - len(infos); missing > 0 {
				yield(Result{}, fmt.Errorf("%w: %d of the %d sessions given are not in the source", handle.ErrNotFound, missing, len(c.ids)))
				return
			}
		}
		for _, info := range LineageOrder(infos) {
			res, err := copySession(ctx, src, dst, info.ID, c)
			if err != nil {
				yield(Result{}, fmt.Errorf("transfer: copy %s: %w", info.ID, err))
				return
			}
			if !yield(res, nil) {
				return
			}
		}
	}
}

// LineageOrder orders infos so that every session comes after its parent
// when both are there, otherwise oldest first (by creation, then ID).
func LineageOrder(infos []handle.Info) []handle.Info {
	byAge := slices.Clone(infos)
	slices.SortStableFunc(byAge, func(a, b handle.Info) int {
		return cmp.Or(cmp.Compare(a.Header.CreatedAt, b.Header.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	in := map[string]bool{}
	for _, i := range byAge {
		in[i.ID] = true
	}
	done := map[string]bool{}
	out := make([]handle.Info, 0, len(byAge))
	for len(out) < len(byAge) {
		progressed := false
		for _, i := range byAge {
			p := i.Header.Parent
			if !done[i.ID] && (p == nil || !in[p.ID] || done[p.ID]) {
				done[i.ID], progressed = true, true
				out = append(out, i)
			}
		}
		if !progressed { // a loop of parents: what is left, oldest first
			for _, i := range byAge {
				if !done[i.ID] {
					done[i.ID] = true
					out = append(out, i)
				}
			}
		}
	}
	return out
}

// Session copies session id from src to dst under the same header (ID,
// createdAt, labels, parent; a fork's parent must be in dst already) with
// its own events as src holds them now, in its encoding unless
// WithEncoding says otherwise, all or nothing; then it checks that the
// copy's log digest is the source's. A session dst holds already is
// refused (handle.ErrExists).
func Session(ctx context.Context, src, dst handle.Store, id string, opts ...Option) (Result, error) {
	return copySession(ctx, src, dst, id, newConfig(opts))
}

func copySession(ctx context.Context, src, dst handle.Store, id string, c config) (Result, error) {
	r, err := src.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return Result{}, err
	}
	defer r.Close()
	info, err := src.Stat(ctx, id)
	if err != nil {
		return Result{}, err
	}
	hdr := r.Header()
	enc := c.encoding
	if enc == "" {
		enc = info.Encoding
	}
	opts := []handle.CreateOption{handle.WithID(id), handle.WithCreatedAt(hdr.CreatedAt), handle.WithLabels(hdr.Labels)}
	if enc != "" {
		opts = append(opts, handle.WithSessionEncoding(enc))
	}
	if hdr.Parent != nil {
		opts = append(opts, handle.WithParent(*hdr.Parent))
	}
	if info.Sealed {
		// A sealed session's copy is sealed as it is, for the same
		// recipients (docs/format.md §11); a store that cannot keep one
		// refuses it.
		fs, ok := src.(interface {
			SealingOf(ctx context.Context, id string) (*handle.Sealing, error)
		})
		if !ok {
			return Result{}, fmt.Errorf("%w: %s: the source cannot say how it is sealed", handle.ErrSealed, id)
		}
		sl, err := fs.SealingOf(ctx, id)
		if err != nil {
			return Result{}, err
		}
		opts = append(opts, handle.SealedAs(sl))
	}
	// The log as it is now (a writer may go on appending): its events up
	// to last, the inherited ones hashed, the session's own copied.
	first, last := hdr.FirstSeq(), r.Seq()
	want := eventlog.NewDigest()
	var n int64
	own := func(yield func(eventlog.Event, error) bool) {
		for e, err := range r.Read(ctx, 0, last) {
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			if e.Seq != want.Next() {
				yield(eventlog.Event{}, fmt.Errorf("%s: event %d where %d was expected", r.Path(), e.Seq, want.Next()))
				return
			}
			want.Add(e)
			if e.Seq < first {
				continue
			}
			n++
			if !yield(e, nil) {
				return
			}
		}
		if want.Next() != last+1 {
			yield(eventlog.Event{}, fmt.Errorf("%s: the log ended at seq %d, before seq %d", r.Path(), want.Next()-1, last))
		}
	}
	// All or nothing: a copy killed at any instant is absent or complete.
	if _, err := dst.CreateFrom(ctx, own, opts...); err != nil {
		return Result{}, err
	}
	got, err := digestOf(ctx, dst, id)
	if err != nil {
		return Result{}, err
	}
	if got != want.String() {
		return Result{}, fmt.Errorf("the copy's log digest %s differs from the source's %s", got, want.String())
	}
	return Result{ID: id, Events: n, Digest: got}, nil
}

// digestOf reads session id of st and returns its log digest.
func digestOf(ctx context.Context, st handle.Store, id string) (string, error) {
	h, err := st.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return "", err
	}
	defer h.Close()
	d, _, err := h.LogDigest(ctx)
	return d, err
}
