package ingest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strconv"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/importer"
)

// made is what importing one session of a unit made, for the sessions it
// spawned: its session ID ("" when it failed), how a seq of its import
// maps to the session's, and what the conversion found.
type made struct {
	id    string
	moved func(int64) int64
	s     importer.Session
}

// scanned is the first reading of a source: what the conversion found,
// and the digest of its events (docs/format.md §6) and how many carry a
// source record.
type scanned struct {
	s      importer.Session
	digest string
	kept   int
}

// convert converts the file at path with imp, handing each event to emit.
func (r *run) convert(ctx context.Context, imp importer.Importer, path string, emit importer.Emit) (importer.Session, error) {
	f, err := r.cfg.fs.Open(path)
	if err != nil {
		return importer.Session{}, err
	}
	defer f.Close()
	if red := r.cfg.red; red != nil {
		// Redacted as it is converted: what scan digests and counts, and
		// what is stored and compared, is the redacted form.
		inner := emit
		emit = func(e eventlog.Event) error {
			e.Data, _ = red.Data(e.Data)
			return inner(e)
		}
	}
	s, err := imp.Convert(ctx, f, path, importer.NewConfig(r.cfg.conv...), emit)
	if err != nil {
		return importer.Session{}, err
	}
	for _, e := range s.Skipped {
		e.Path = path
	}
	if s.Partial != nil {
		s.Partial.Path = path
	}
	return s, nil
}

// scan reads the source once, keeping nothing but what it found.
func (r *run) scan(ctx context.Context, imp importer.Importer, path string) (scanned, error) {
	d := eventlog.NewDigest()
	kept := 0
	s, err := r.convert(ctx, imp, path, func(e eventlog.Event) error {
		d.Add(e)
		if _, ok := importer.RecordOf(imp.Name(), e); ok {
			kept++
		}
		return nil
	})
	if err != nil {
		return scanned{}, err
	}
	return scanned{s: s, digest: d.String(), kept: kept}, nil
}

// events reads the source again and yields its events; it ends with an
// error when they are not the events scan saw (the file changed since).
func (r *run) events(ctx context.Context, imp importer.Importer, path string, want scanned) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		d := eventlog.NewDigest()
		stopped := false
		_, err := r.convert(ctx, imp, path, func(e eventlog.Event) error {
			d.Add(e)
			if !yield(e, nil) {
				stopped = true
				return errStop
			}
			return nil
		})
		switch {
		case stopped:
		case err != nil:
			yield(eventlog.Event{}, err)
		case d.String() != want.digest || d.Next() != want.s.Count:
			yield(eventlog.Event{}, fmt.Errorf("%s: %w; import it again", path, errChanged))
		}
	}
}

// placed is events, placed in time: an untimed source's (importer.Session.
// Untimed) moved to start at at, the createdAt of its session; any
// other's as they are.
func (r *run) placed(ctx context.Context, imp importer.Importer, path string, sc scanned, at int64) iter.Seq2[eventlog.Event, error] {
	events := r.events(ctx, imp, path, sc)
	if !sc.s.Untimed {
		return events
	}
	return func(yield func(eventlog.Event, error) bool) {
		for e, err := range events {
			e.Time += at
			if !yield(e, err) {
				return
			}
		}
	}
}

// placement is where a new session of an untimed source s starts (0 for
// a source with times of its own): the source file's modification time
// mtime — a trajectory is saved as its run goes, so that is when the run
// last wrote it — unless that is before the format's first release or
// after now, a time the file cannot have been written at, when it is now.
func placement(s importer.Session, mtime, now time.Time) int64 {
	if !s.Untimed {
		return 0
	}
	at, limit := mtime.UnixMilli(), now.UnixMilli()
	if at < s.Since || at > limit {
		return limit
	}
	return at
}

// importKey is the identity of a source: its format and its own session
// id (importer.Session.ID); for a source with none, its bytes' digest.
func importKey(format string, s importer.Session) string {
	if s.ID != "" {
		return format + ":" + s.ID
	}
	return format + ":" + s.Digest
}

// foreign imports the trace of f: unchanged when a session of the same
// identity holds it already, appended to that session when the trace grew,
// created otherwise. earlier are the sessions of the unit before it.
func (r *run) foreign(ctx context.Context, imp importer.Importer, f source, earlier []made) (Result, made) {
	format, path := imp.Name(), f.path
	sc, err := r.scan(ctx, imp, path)
	if err != nil {
		return failed(path, format, err), made{}
	}
	s := sc.s
	res := Result{
		Source: path, Format: format, Records: s.Records, Kept: sc.kept, SourceBytes: s.Bytes,
		Partial: s.Partial, Skipped: s.Skipped, Torn: s.Torn,
	}
	key := importKey(format, s)
	earlierSessions, err := r.st.List(ctx, handle.WithLabels(map[string]string{LabelImportKey: key}))
	if err != nil {
		return failed(path, format, err), made{}
	}
	for _, info := range earlierSessions {
		g, ok, err := r.against(ctx, format, info, imp, path, sc)
		if err != nil {
			return failed(path, format, err), made{}
		}
		if !ok {
			continue
		}
		res.stored(info)
		if g.same {
			res.Status, res.Reason = Unchanged, "its session holds it already"
			if g.older {
				res.Reason = "its session holds it already, and more: an earlier copy of the source"
			}
			return res, r.made(made{id: info.ID, moved: g.moved, s: s})
		}
		after, err := r.st.AppendAll(ctx, info.ID, g.next, g.tail(r.placed(ctx, imp, path, sc, info.Header.CreatedAt)))
		if err != nil {
			return failed(path, format, fmt.Errorf("appending to %s: %w", info.ID, err)), made{}
		}
		res.Status = Appended
		res.stored(after)
		res.Reason = fmt.Sprintf("the source grew: %d events appended", after.Events-info.Events)
		return res, r.made(made{id: info.ID, moved: g.moved, s: s})
	}

	labels := maps.Clone(s.Labels)
	labels[LabelImportKey], labels[LabelSourceDigest] = key, s.Digest
	if s.Partial != nil {
		labels[LabelPartial] = strconv.Itoa(s.Partial.Line)
	}
	at := placement(s, f.mtime, time.Now())
	opts := []handle.Option{handle.WithCreatedAt(s.CreatedAt + at), handle.WithLabels(labels)}
	if r.cfg.encoding != "" {
		opts = append(opts, handle.WithEncoding(r.cfg.encoding))
	}
	if p := r.parentOf(s, earlier); p != nil {
		opts = append(opts, handle.WithParent(*p))
	}
	info, err := r.st.CreateFrom(ctx, r.placed(ctx, imp, path, sc, at), opts...)
	if err != nil {
		return failed(path, format, err), made{}
	}
	res.Status = Created
	res.stored(info)
	return res, r.made(made{id: info.ID, moved: same, s: s})
}

// made records m for the sessions that follow: a fork of it (Codex) links
// to its last event.
func (r *run) made(m made) made {
	if m.s.Key != "" && m.s.Count > 0 {
		r.keys[m.s.Key] = eventlog.Parent{ID: m.id, Seq: m.moved(m.s.Count - 1)}
	}
	return m
}

// parentOf is the parent of s: the session of the unit that spawned it (a
// Claude Code subagent: a child at its Task call), or the session of this
// import it was forked from (Codex: a child at its last event).
func (r *run) parentOf(s importer.Session, earlier []made) *eventlog.Parent {
	if s.Key != "" {
		for _, m := range earlier {
			if sp, ok := m.s.Spawns[s.Key]; ok && m.id != "" {
				return &eventlog.Parent{ID: m.id, Seq: m.moved(sp.Seq), Mode: eventlog.ModeChild, Call: sp.Call}
			}
		}
	}
	if at, ok := r.keys[s.ForkOf]; ok && s.ForkOf != "" {
		return &eventlog.Parent{ID: at.ID, Seq: at.Seq, Mode: eventlog.ModeChild}
	}
	return nil
}

// against compares the source with info, a session of its identity: ok
// when the session holds it (same) or a beginning of it (g.tail is what
// to append); not ok for another source of the same identity, one the
// session cannot grow into (it was imported partial), or a damaged copy of
// a beginning of the session's source (Partial), which gets its own.
func (r *run) against(ctx context.Context, format string, info handle.Info, imp importer.Importer, path string, sc scanned) (growth, bool, error) {
	if info.Header.Labels[LabelSourceDigest] == sc.s.Digest && info.Events == sc.s.Count {
		return growth{same: true, moved: same}, true, nil // as first imported, never grown
	}
	old, err := r.st.Open(ctx, info.ID, handle.ReadOnly)
	if err != nil {
		return growth{}, false, err
	}
	defer old.Close()
	g, err := compare(ctx, format, sc.s.Rewrites, old, r.placed(ctx, imp, path, sc, info.Header.CreatedAt), r.cfg.red)
	if err != nil {
		return growth{}, false, err
	}
	switch {
	case g.same && g.older && sc.s.Partial != nil:
		return growth{}, false, nil // a damaged copy: a session of its own, labelled partial
	case g.same:
		return g, true, nil
	case g.grew && info.Header.Labels[LabelPartial] == "":
		return g, true, nil
	}
	return growth{}, false, nil
}

// same maps a seq to itself.
func same(seq int64) int64 { return seq }

// errChanged reports a source that changed between two readings.
var errChanged = errors.New("the file changed while it was imported")

// errStop stops a conversion whose events nobody wants any more.
var errStop = errors.New("ingest: stopped")
