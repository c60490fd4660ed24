package verify

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/secrets/redact"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

type config struct {
	known func() []projection.Projection
	store []handle.Option
}

// Option configures a check.
type Option func(*config)

// WithProjections sets the projections whose state digests are checked:
// newFn returns fresh instances of them, once per session (default
// projection.Verifiable). A checkpoint naming any other is counted as
// unchecked.
func WithProjections(newFn func() []projection.Projection) Option {
	return func(c *config) { c.known = newFn }
}

// WithStoreOptions sets the options of the file store File opens a
// file's folder with (handle.WithIdentities, to read sealed logs).
func WithStoreOptions(opts ...handle.Option) Option {
	return func(c *config) { c.store = opts }
}

func newConfig(opts []Option) config {
	c := config{known: projection.Verifiable}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Session checks session id of st: it opens it read-only and reads every
// event of its logical log, checking each checkpoint's digests. It never
// fails: what it could not check is the report's Error.
func Session(ctx context.Context, st handle.Store, id string, opts ...Option) Report {
	c := newConfig(opts)
	rep := Report{Path: id, ID: &id}
	h, err := st.Open(ctx, id, handle.ReadOnly)
	if se, ok := st.(handle.SealedExporter); ok && errors.Is(err, seal.ErrNoKey) {
		// A sealed session without its key: its framing, at least.
		if ke := (*seal.KeyError)(nil); errors.As(err, &ke) && ke.Path != "" {
			rep.Path = ke.Path
		}
		switch fr, ferr := se.Framing(ctx, id); {
		case ferr != nil:
			rep.fail(ferr) // the framing's damage is the finding
		case fr != nil:
			rep.Torn = tornOf(fr.Torn)
			rep.failFraming(err, fr)
		default:
			rep.fail(err)
		}
		return rep
	}
	if err != nil {
		// The open checks the structure: the damage's seq is how far the
		// log held.
		if info, serr := st.Stat(ctx, id); serr == nil {
			rep.Path = info.Path
			rep.count(info.Header, damageSeq(err, info.LastSeq+1))
		} else if fs, ok := st.(pathChecker); ok {
			// Not even the tail reads (the last row is damaged): the file
			// says how far it held, as File reports it.
			if path, perr := fs.Path(id); perr == nil {
				rep.Path = path
				chk := fs.CheckPath(ctx, path, nil)
				rep.count(chk.Header, chk.Header.FirstSeq()+chk.Events)
			}
		}
		rep.fail(err)
		return rep
	}
	defer h.Close()
	rep.Path, rep.Torn = h.Path(), tornOf(h.Torn())
	prot := &redact.Protection{}
	if info, serr := st.Stat(ctx, id); serr == nil {
		prot.Sealed = info.Sealed
	}
	rep.Protection = prot
	res, err := checkpoint.VerifyEach(ctx, h, func(e eventlog.Event) { prot.Count(e.Data) }, c.known()...)
	rep.Checkpoints, rep.Unchecked = int64(res.Checkpoints), int64(res.Unchecked)
	rep.count(h.Header(), damageSeq(err, h.Seq()+1))
	if err != nil {
		rep.fail(err)
		return rep
	}
	rep.OK = true
	return rep
}

// pathChecker is a store whose sessions are files it can check by path
// (file.Store).
type pathChecker interface {
	Path(id string) (string, error)
	CheckPath(ctx context.Context, path string, fn func(eventlog.Event) error) file.CheckResult
}

// count sets Events to the logical log up to seq next (exclusive) and
// FileEvents to the session's own events among them.
func (r *Report) count(hdr eventlog.Header, next int64) {
	r.Events, r.FileEvents = next, max(0, next-hdr.FirstSeq())
}

// damageSeq is how far a log held before err: the seq the damaged row
// should hold when err names one (corruption), else def (nil, or a failure
// that is not in the rows: every row was checked).
func damageSeq(err error, def int64) int64 {
	var ce *eventlog.CorruptError
	if errors.As(err, &ce) && ce.Seq >= 0 {
		return ce.Seq
	}
	return def
}

// Store checks every session of st, in ID order (oldest first): those its
// List describes, each with Session, and those it cannot describe, each
// a failed report. The error is only for a List that failed.
func Store(ctx context.Context, st handle.Store, opts ...Option) iter.Seq2[Report, error] {
	return func(yield func(Report, error) bool) {
		broken := map[string]error{}
		infos, err := st.List(ctx, handle.SkipBroken(func(id string, err error) { broken[id] = err }))
		if err != nil {
			yield(Report{}, err)
			return
		}
		ids := make([]string, 0, len(infos)+len(broken))
		for _, info := range infos {
			ids = append(ids, info.ID)
		}
		for id := range broken {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				yield(Report{}, err)
				return
			}
			rep := Report{Path: id, ID: &id}
			if err, ok := broken[id]; ok && !errors.Is(err, seal.ErrNoKey) {
				rep.fail(err)
			} else {
				rep = Session(ctx, st, id, opts...)
			}
			if !yield(rep, nil) {
				return
			}
		}
	}
}

// Files returns the files of folder dir named like sessions
// (<ID>.jsonl, <ID>.jsonl.zst), in name order — whatever they are: one
// that is not a regular file is for File to report as refused, not to be
// left out.
func Files(fsys afero.Fs, dir string) ([]string, error) {
	entries, err := afero.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("verify: read folder %q: %w", dir, err)
	}
	var paths []string
	for _, e := range entries {
		if _, _, ok := file.ParseFileName(e.Name()); ok {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths, nil
}

// File checks the log file at path: in a store's folder when it is named
// <ID>.jsonl[.zst] (its header's ID must match, and the store must not
// refuse the session: stored twice with different logs, or not a regular
// file), or a freely named one (an export). A fork's parent is read from
// the file's folder.
func File(ctx context.Context, fsys afero.Fs, path string, opts ...Option) Report {
	c := newConfig(opts)
	rep := Report{Path: path}
	st := file.New(fsys, filepath.Dir(path), c.store...)
	if id, _, ok := file.ParseFileName(filepath.Base(path)); ok {
		rep.ID = &id
		// A session the store refuses (docs/format.md §2) is not a clean
		// log, whatever its rows — and is never opened.
		if _, err := st.Path(id); err != nil {
			rep.fail(err)
			return rep
		}
	}
	prot := &redact.Protection{}
	chk := st.CheckPath(ctx, path, func(e eventlog.Event) error {
		prot.Count(e.Data) // the file's own events
		return nil
	})
	if chk.Header.ID != "" {
		rep.ID = &chk.Header.ID
	}
	rep.count(chk.Header, chk.Header.FirstSeq()+chk.Events)
	if chk.Framing != nil {
		rep.Torn = tornOf(chk.Torn)
		rep.failFraming(chk.Err, chk.Framing)
		return rep
	}
	if chk.Err != nil {
		rep.fail(chk.Err)
		return rep
	}
	rep.Torn = tornOf(chk.Torn)
	if rep.ID != nil {
		if info, err := st.Stat(ctx, *rep.ID); err == nil && info.Path == path {
			prot.Sealed = info.Sealed
		}
	}
	rep.Protection = prot
	// The structure is sound: now the logical log (a fork's parent
	// included) and every checkpoint's digests.
	h, err := st.OpenPath(ctx, path)
	if err != nil {
		rep.fail(err)
		return rep
	}
	defer h.Close()
	res, err := checkpoint.Verify(ctx, h, c.known()...)
	rep.Checkpoints, rep.Unchecked = int64(res.Checkpoints), int64(res.Unchecked)
	if err != nil {
		rep.count(chk.Header, damageSeq(err, rep.Events))
		rep.fail(err)
		return rep
	}
	rep.OK = true
	return rep
}
