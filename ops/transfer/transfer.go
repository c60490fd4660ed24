package transfer

import (
	"cmp"
	"context"
	"errors"
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
	Status Status `json:"status"`
	Events int64  `json:"events"` // the session's own events (a fork's inherited ones are its parent's)
	Digest string `json:"digest"` // the log digest, the same on both sides
}

// Status says what a copy did with a session.
type Status string

// The statuses of a Result.
const (
	Created   Status = "created"   // the destination had no such session: it holds the copy now
	Unchanged Status = "unchanged" // the destination held the same session already: nothing written
)

// ConflictError is a session the destination holds under the ID of the
// session copied, with another lineage or another logical log: the copy
// writes nothing and stops there. It wraps handle.ErrExists.
type ConflictError struct {
	ID     string
	Source string // the session's path in the source store
	Dest   string // the path of the session under that ID in the destination
	Reason string // what differs
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the destination's %s is another session than the source's %s under the same ID: %s", e.Dest, e.Source, e.Reason)
}

// Unwrap returns handle.ErrExists.
func (e *ConflictError) Unwrap() error { return handle.ErrExists }

// DigestError is a copy whose log, read back from the destination, does
// not hash as the source's did while it was copied: the destination
// stored something other than what it was given. The copy is deleted.
type DigestError struct {
	ID   string
	Got  string // the copy's log digest
	Want string // the source's
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("the copy of %s reads back with log digest %s, the source's is %s: removed", e.ID, e.Got, e.Want)
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
// sessions copied before it stay copied, and the same Copy run again
// passes over them (Unchanged) and goes on.
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
// copy's log digest is the source's. A copy is idempotent: a session dst
// holds already under that ID with the same lineage and the same logical
// log (its digest the source's) is left as it is (Unchanged), so that a
// copy run again after a failure or a kill goes on where it stopped; one
// with another log or lineage is a *ConflictError and nothing is written.
func Session(ctx context.Context, src, dst handle.Store, id string, opts ...Option) (Result, error) {
	res, err := copySession(ctx, src, dst, id, newConfig(opts))
	if err != nil {
		return Result{}, fmt.Errorf("transfer: copy %s: %w", id, err)
	}
	return res, nil
}

func copySession(ctx context.Context, src, dst handle.Store, id string, c config) (Result, error) {
	r, err := src.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return Result{}, err
	}
	defer r.Close()
	log := &sourceLog{r: r, first: r.Header().FirstSeq(), last: r.Seq()} // the log as it is now
	had, err := dst.Stat(ctx, id)
	switch {
	case err == nil:
		return log.sameAs(ctx, dst, had)
	case !errors.Is(err, handle.ErrNotFound):
		return Result{}, err
	}
	info, err := src.Stat(ctx, id)
	if err != nil {
		return Result{}, err
	}
	hdr := r.Header()
	enc := c.encoding
	if enc == "" {
		enc = info.Encoding
	}
	opts := []handle.Option{handle.WithID(id), handle.WithCreatedAt(hdr.CreatedAt), handle.WithLabels(hdr.Labels)}
	if enc != "" {
		opts = append(opts, handle.WithEncoding(enc))
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
		opts = append(opts, func(c *handle.Config) { c.SealAs = sl })
	}
	// All or nothing: a copy killed at any instant is absent or complete.
	if _, err := dst.CreateFrom(ctx, log.own(ctx), opts...); err != nil {
		if errors.Is(err, handle.ErrExists) { // another copy made it meanwhile
			if had, serr := dst.Stat(ctx, id); serr == nil {
				return log.sameAs(ctx, dst, had)
			}
		}
		return Result{}, err
	}
	got, err := digestOf(ctx, dst, id)
	if err != nil {
		return Result{}, err // a retry reads it back again (sameAs)
	}
	if want := log.digest.String(); got != want {
		// What the destination holds is not the source's session: it
		// goes, so that no copy stays under the source's ID.
		err := &DigestError{ID: id, Got: got, Want: want}
		if derr := dst.Delete(ctx, id); derr != nil && !errors.Is(derr, handle.ErrNotFound) {
			return Result{}, errors.Join(err, fmt.Errorf("the copy could not be removed: %w", derr))
		}
		return Result{}, err
	}
	return Result{ID: id, Status: Created, Events: log.n, Digest: got}, nil
}

// sourceLog is the log of the session being copied, as it was when the
// copy began: events up to last, the session's own from first.
type sourceLog struct {
	r           handle.Handle
	first, last int64
	digest      *eventlog.Digest // of the events own has yielded, the inherited ones included
	n           int64            // own events yielded
}

// own yields the session's own events, hashing every event of its
// logical log (a fork's inherited ones too) into l.digest, and fails when
// the log does not run unbroken to l.last.
func (l *sourceLog) own(ctx context.Context) iter.Seq2[eventlog.Event, error] {
	l.digest, l.n = eventlog.NewDigest(), 0
	return func(yield func(eventlog.Event, error) bool) {
		want := l.digest
		for e, err := range l.r.Read(ctx, 0, l.last) {
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			if e.Seq != want.Next() {
				yield(eventlog.Event{}, fmt.Errorf("%s: event %d where %d was expected", l.r.Path(), e.Seq, want.Next()))
				return
			}
			want.Add(e)
			if e.Seq < l.first {
				continue
			}
			l.n++
			if !yield(e, nil) {
				return
			}
		}
		if want.Next() != l.last+1 {
			yield(eventlog.Event{}, fmt.Errorf("%s: the log ended at seq %d, before seq %d", l.r.Path(), want.Next()-1, l.last))
		}
	}
}

// sameAs compares the session dst holds under the source's ID (had) with
// the source: the same lineage and logical log is Unchanged, anything
// else a *ConflictError.
func (l *sourceLog) sameAs(ctx context.Context, dst handle.Store, had handle.Info) (Result, error) {
	conflict := func(format string, args ...any) error {
		return &ConflictError{ID: had.ID, Source: l.r.Path(), Dest: had.Path, Reason: fmt.Sprintf(format, args...)}
	}
	if want, got := l.r.Header().Parent, had.Header.Parent; !sameParent(want, got) {
		return Result{}, conflict("its lineage is %s, the source's %s", lineage(got), lineage(want))
	}
	if had.LastSeq != l.last {
		return Result{}, conflict("it holds %s, the source %s", events(had.LastSeq+1), events(l.last+1))
	}
	for _, err := range l.own(ctx) {
		if err != nil {
			return Result{}, err
		}
	}
	got, err := digestOf(ctx, dst, had.ID)
	if err != nil {
		return Result{}, err
	}
	if want := l.digest.String(); got != want {
		return Result{}, conflict("its log digest is %s, the source's %s", got, want)
	}
	return Result{ID: had.ID, Status: Unchanged, Events: l.n, Digest: got}, nil
}

func sameParent(a, b *eventlog.Parent) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// lineage names a header's parent for a conflict's reason.
func lineage(p *eventlog.Parent) string {
	if p == nil {
		return "none (no parent)"
	}
	return p.String()
}

func events(n int64) string {
	if n == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}

// digestOf reads session id of st and returns its log digest.
func digestOf(ctx context.Context, st handle.Store, id string) (string, error) {
	h, err := st.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return "", err
	}
	defer h.Close()
	// Hashed from the events read back, not h.LogDigest: that may resume
	// the digest state the store saved as it wrote, which says what it
	// was given, not what it holds.
	d := eventlog.NewDigest()
	for e, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			return "", err
		}
		d.Add(e)
	}
	return d.String(), nil
}
