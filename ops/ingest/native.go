package ingest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// native imports a sessionlog log file (an export, say; raw, or zstd when
// its name ends in .zst) under its own ID, with its labels, createdAt
// and encoding (unless WithEncoding says another), holding its logical log — a fork's inherited events, read from the
// file's folder, become its own rows: it names no parent. Its identity is
// its ID: a session of that ID that holds the same log is unchanged, one
// that holds a beginning of it grows by the rest, one that holds another
// log is a conflict (Failed, wrapping handle.ErrExists).
func (r *run) native(ctx context.Context, f source) Result {
	path := f.path
	fst := file.New(r.cfg.fs, filepath.Dir(path), r.cfg.srcOpts...)
	src, err := fst.OpenPath(ctx, path)
	if err != nil {
		return failed(path, Sessionlog, err)
	}
	defer src.Close()
	last := src.Seq() // the log as it is now
	hdr := src.Header()
	res := Result{Source: path, Format: Sessionlog, ID: hdr.ID, SourceBytes: f.size}
	events := func(from int64) iter.Seq2[eventlog.Event, error] { return src.Read(ctx, from, last) }

	info, err := r.st.Stat(ctx, hdr.ID)
	switch {
	case errors.Is(err, handle.ErrNotFound):
		enc := r.cfg.encoding
		if enc == "" {
			enc = file.EncodingOfPath(path)
		}
		opts := []handle.Option{handle.WithID(hdr.ID), handle.WithCreatedAt(hdr.CreatedAt), handle.WithEncoding(enc)}
		if len(hdr.Labels) > 0 {
			opts = append(opts, handle.WithLabels(hdr.Labels))
		}
		// A sealed log is imported sealed as it is: the same recipients
		// read it (docs/format.md §11); a store that cannot keep one
		// refuses it.
		if sl, err := fst.SealingOfPath(ctx, path); err != nil {
			return failed(path, Sessionlog, err)
		} else if sl != nil {
			opts = append(opts, func(c *handle.Config) { c.SealAs = sl })
		}
		info, err := r.st.CreateFrom(ctx, events(0), opts...)
		if err != nil {
			return failed(path, Sessionlog, err)
		}
		res.Status = Created
		res.stored(info)
		return res
	case err != nil:
		return failed(path, Sessionlog, err)
	}
	res.stored(info)
	have := info.Events
	if have > last+1 {
		return failed(path, Sessionlog, fmt.Errorf("%w: %s holds %d events, more than %s's %d: another log", handle.ErrExists, hdr.ID, have, path, last+1))
	}
	prefix, err := r.holds(ctx, hdr.ID, events(0), have)
	if err != nil {
		return failed(path, Sessionlog, err)
	}
	if !prefix {
		return failed(path, Sessionlog, fmt.Errorf("%w: %s holds other events than %s", handle.ErrExists, hdr.ID, path))
	}
	if have == last+1 {
		res.Status, res.Reason = Unchanged, "its session holds it already"
		return res
	}
	after, err := r.st.AppendAll(ctx, hdr.ID, have, events(have))
	if err != nil {
		return failed(path, Sessionlog, fmt.Errorf("appending to %s: %w", hdr.ID, err))
	}
	res.Status = Appended
	res.stored(after)
	res.Reason = fmt.Sprintf("the log grew: %d events appended", after.Events-have)
	return res
}

// holds reports whether session id holds the first n events of events,
// and nothing else: the digest of its log is theirs.
func (r *run) holds(ctx context.Context, id string, events iter.Seq2[eventlog.Event, error], n int64) (bool, error) {
	h, err := r.st.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return false, err
	}
	defer h.Close()
	have, next, err := h.LogDigest(ctx)
	if err != nil {
		return false, err
	}
	if next != n {
		return false, nil
	}
	d := eventlog.NewDigest()
	for e, err := range events {
		if err != nil {
			return false, err
		}
		if e.Seq >= n {
			break
		}
		d.Add(e)
	}
	return d.Next() == n && d.String() == have, nil
}
