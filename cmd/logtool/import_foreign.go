package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/importer"
)

// Labels an import writes beside the format's own (docs/cli.md).
const (
	labelImportKey    = "importKey"    // which source a session imports
	labelSourceDigest = "sourceDigest" // sha256 of the source bytes first imported
	labelPartial      = "partial"      // the line a damaged source was cut before
)

// Statuses of an importResult.
const (
	statusCreated   = "created"
	statusAppended  = "appended"  // the source grew: its new events appended
	statusUnchanged = "unchanged" // imported before, nothing new: skipped
)

// foreign imports the traces of format f in path (a file, or a folder
// walked recursively), unit by unit: a file's session first, then its
// sub-sessions as its children. A file that is refused or damaged is
// reported on stderr and counted in imp.failed; the others are imported.
func (imp *importRun) foreign(ctx context.Context, fsys afero.Fs, f importer.Importer, path string, opts ...importer.Option) error {
	units, err := importer.Units(fsys, f, path)
	if errors.Is(err, importer.ErrNoFiles) {
		return usageError(err)
	}
	if err != nil {
		return err
	}
	imp.progress.files = len(units)
	for _, u := range units {
		sessions, refused := importer.Convert(ctx, fsys, f, u, opts...)
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, rerr := range refused {
			imp.failed++
			imp.note("%v: not imported (nothing kept for it)", rerr)
		}
		ids := make([]string, len(sessions))
		for i, s := range sessions {
			var parent *eventlog.Parent
			if l := s.Parent; l != nil && ids[l.Index] != "" {
				parent = &eventlog.Parent{ID: ids[l.Index], Seq: l.Seq, Mode: eventlog.ModeChild, Call: l.Call}
			} else if at, ok := imp.keys[s.ForkOf]; ok && s.ForkOf != "" {
				// A fork (Codex's forked_from_id) of a session of this
				// import: a child of it, spawned at its last event.
				parent = &eventlog.Parent{ID: at.ID, Seq: at.Seq, Mode: eventlog.ModeChild}
			}
			res, err := imp.session(ctx, f.Name(), s, parent)
			if err != nil {
				return err
			}
			ids[i] = res.ID
			imp.results = append(imp.results, res)
			if s.Key != "" {
				imp.keys[s.Key] = eventlog.Parent{ID: res.ID, Seq: int64(len(s.Events) - 1)}
			}
			imp.report(s, res)
			imp.progress.add(s, res)
		}
		imp.progress.fileDone()
	}
	return nil
}

// report says on stderr what was cut from s, and how to get it back.
func (imp *importRun) report(s importer.Session, res importResult) {
	for _, bad := range s.Skipped {
		imp.note("%v: skipped (--skip-bad); the rest of the file is in %s", bad, res.ID)
	}
	if t := s.Torn; t != nil {
		imp.note("%s: line %d: torn last line (%d bytes at offset %d, no newline: a writer was cut off) left out; import again once it is whole", s.Source, t.Line, t.Bytes, t.Offset)
	}
	if p := s.Partial; p != nil {
		imp.failed++
		imp.note("%v: imported the %d records before it as %s, labelled %s=%d; fix the line and import again, or pass --skip-bad to import past it", p, s.Records, res.ID, labelPartial, p.Line)
	}
}

// note writes one line on stderr.
func (imp *importRun) note(format string, args ...any) {
	imp.progress.clear()
	fmt.Fprintf(imp.stderr, "logtool: import: %s\n", oneLine(fmt.Sprintf(format, args...)))
}

// importKey names the source a session imports: format, the trace's own
// id, the sub-session key and the file's name (dsh's snapshots share one
// placeholder id).
func importKey(format string, s importer.Session) string {
	return format + ":" + s.Labels["sourceId"] + ":" + s.Key + ":" + s.Labels["sourceFile"]
}

// session imports s: skipped when a session of --dir already holds the
// same records, appended to it when the source grew (its events a prefix
// of s's), created otherwise.
func (imp *importRun) session(ctx context.Context, format string, s importer.Session, parent *eventlog.Parent) (importResult, error) {
	res := importResult{Source: s.Source, Events: int64(len(s.Events)), Records: s.Records, SourceBytes: s.Bytes}
	for _, e := range s.Events {
		if _, ok := importer.RecordOf(format, e); ok {
			res.Kept++
		}
	}
	if s.Partial != nil {
		res.Partial = s.Partial.Line
	}
	key := importKey(format, s)
	earlier, err := imp.st.List(ctx, handle.WithLabel(labelImportKey, key))
	if err != nil {
		return res, err
	}
	for _, info := range earlier {
		res.ID, res.Path = info.ID, info.Path
		if info.Header.Labels[labelSourceDigest] == s.Digest {
			res.Status = statusUnchanged
			return res, nil
		}
		n, same, err := imp.prefix(ctx, info.ID, s.Events)
		if err != nil {
			return res, err
		}
		switch {
		case same && n == len(s.Events):
			res.Status = statusUnchanged
			return res, nil
		case same && info.Header.Labels[labelPartial] == "":
			res.Status = statusAppended
			return res, imp.appendTo(ctx, info.ID, s.Events[n:])
		}
	}
	labels := map[string]string{labelImportKey: key, labelSourceDigest: s.Digest}
	for k, v := range s.Labels {
		labels[k] = v
	}
	if s.Partial != nil {
		labels[labelPartial] = strconv.Itoa(s.Partial.Line)
	}
	opts := []handle.CreateOption{handle.WithCreatedAt(s.CreatedAt), handle.WithLabels(labels)}
	if parent != nil {
		opts = append(opts, handle.WithParent(*parent))
	}
	dst, err := imp.st.Create(ctx, opts...)
	if err != nil {
		return res, err
	}
	res.ID, res.Path, res.Status = dst.ID(), dst.Path(), statusCreated
	err = appendBatches(ctx, dst, s.Events)
	if err := imp.finish(ctx, dst, res, err); err != nil {
		return res, err
	}
	return res, imp.verify(ctx, res.ID, int64(len(s.Events)))
}

// prefix reads session id and reports whether its events are the first
// of events (the same canonical bytes, seq by seq), and how many it holds.
func (imp *importRun) prefix(ctx context.Context, id string, events []eventlog.Event) (n int, same bool, err error) {
	h, err := imp.st.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return 0, false, err
	}
	defer h.Close()
	for e, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			return n, false, err
		}
		if n >= len(events) || !bytes.Equal(eventlog.Canon(e), eventlog.Canon(events[n])) {
			return n, false, nil
		}
		n++
	}
	return n, true, nil
}

// appendTo appends events (seqs following the session's) to session id.
func (imp *importRun) appendTo(ctx context.Context, id string, events []eventlog.Event) error {
	dst, err := imp.st.Open(ctx, id, handle.ReadWrite)
	if err != nil {
		return err
	}
	err = appendBatches(ctx, dst, events)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return imp.verify(ctx, id, events[len(events)-1].Seq+1)
}

// verify reopens session id, which reads and checks its whole log, and
// checks that it holds events events.
func (imp *importRun) verify(ctx context.Context, id string, events int64) error {
	h, err := imp.st.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return fmt.Errorf("import: verifying %s: %w", id, err)
	}
	defer h.Close()
	if got := h.Seq() + 1; got != events {
		return fmt.Errorf("import: verifying %s: %d events, want %d", id, got, events)
	}
	return nil
}
