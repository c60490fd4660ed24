package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
		moved := make([]func(int64) int64, len(sessions))
		for i, s := range sessions {
			var parent *eventlog.Parent
			if l := s.Parent; l != nil && ids[l.Index] != "" {
				parent = &eventlog.Parent{ID: ids[l.Index], Seq: moved[l.Index](l.Seq), Mode: eventlog.ModeChild, Call: l.Call}
			} else if at, ok := imp.keys[s.ForkOf]; ok && s.ForkOf != "" {
				// A fork (Codex's forked_from_id) of a session of this
				// import: a child of it, spawned at its last event.
				parent = &eventlog.Parent{ID: at.ID, Seq: at.Seq, Mode: eventlog.ModeChild}
			}
			res, mv, err := imp.session(ctx, f.Name(), s, parent)
			if err != nil {
				return err
			}
			ids[i], moved[i] = res.ID, mv
			imp.results = append(imp.results, res)
			if s.Key != "" {
				imp.keys[s.Key] = eventlog.Parent{ID: res.ID, Seq: mv(int64(len(s.Events) - 1))}
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
//
// moved maps a seq of s to the session's (they differ in a session grown
// by an earlier import).
func (imp *importRun) session(ctx context.Context, format string, s importer.Session, parent *eventlog.Parent) (res importResult, moved func(int64) int64, err error) {
	res = importResult{Source: s.Source, Events: int64(len(s.Events)), Records: s.Records, SourceBytes: s.Bytes}
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
		return res, nil, err
	}
	for _, info := range earlier {
		res.ID, res.Path = info.ID, info.Path
		if info.Header.Labels[labelSourceDigest] == s.Digest && info.Events == int64(len(s.Events)) {
			res.Status = statusUnchanged // as first imported, never grown
			return res, same, nil
		}
		old, err := imp.events(ctx, info.ID)
		if err != nil {
			return res, nil, err
		}
		g := grow(format, old, s.Events)
		switch {
		case g.same:
			res.Status, res.Events = statusUnchanged, info.Events
			return res, g.moved, nil
		case g.ok && info.Header.Labels[labelPartial] == "":
			res.Status, res.Events = statusAppended, g.tail[len(g.tail)-1].Seq+1
			return res, g.moved, imp.appendTo(ctx, info.ID, g.tail)
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
		return res, nil, err
	}
	res.ID, res.Path, res.Status = dst.ID(), dst.Path(), statusCreated
	err = appendBatches(ctx, dst, s.Events)
	if err := imp.finish(ctx, dst, res, err); err != nil {
		return res, nil, err
	}
	return res, same, imp.verify(ctx, res.ID, int64(len(s.Events)))
}

// same maps a seq to itself.
func same(seq int64) int64 { return seq }

// events reads every event of session id.
func (imp *importRun) events(ctx context.Context, id string) ([]eventlog.Event, error) {
	h, err := imp.st.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	var out []eventlog.Event
	for e, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// growLabel labels the rollbacks import appends to a grown session.
const growLabel = "import"

// growth is how a session imported before relates to a new import of
// its source.
type growth struct {
	same bool             // the session holds the new import's records already
	ok   bool             // the source grew: append tail
	tail []eventlog.Event // with their seqs in the session
	// moved maps a seq of the new import to the session's (same or ok).
	moved func(int64) int64
}

// grow compares old, a session's events, with events, a new import of its
// source. The session stands for the events of its earlier imports, each
// grown one's own rollback (label "import") undoing what the end of the
// source had closed then. When those hold the new import's records and
// nothing else differs, it is the same; when they are the first of the
// new import's records, events differing only after them where the old
// import closed the end of the source (events that carry no record), the
// source grew: tail is a rollback to the last event in common (when the
// old import closed anything) and the new events, their seqs and the seqs
// their rollbacks name moved to the session's.
func grow(format string, old, events []eventlog.Event) growth {
	// eff is what the session stands for; at[i] the seq of eff[i] in it.
	var eff []eventlog.Event
	var at []int64
	for _, e := range old {
		if e.Type == eventlog.TypeRollback {
			var d struct {
				To    int64  `json:"to"`
				Label string `json:"label"`
			}
			if json.Unmarshal(e.Data, &d) == nil && d.Label == growLabel {
				k, _ := slices.BinarySearch(at, d.To+1)
				eff, at = eff[:k], at[:k]
				continue
			}
		}
		eff = append(eff, e)
		at = append(at, e.Seq)
	}
	n := 0
	for n < len(eff) && n < len(events) && sameEvent(eff[n], events[n]) {
		n++
	}
	for _, e := range eff[n:] {
		if _, ok := importer.RecordOf(format, e); ok {
			return growth{} // a record differs: another source
		}
	}
	recordsAfter := false
	for _, e := range events[n:] {
		if _, ok := importer.RecordOf(format, e); ok {
			recordsAfter = true
			break
		}
	}
	within := func(seq int64) int64 { // a seq of the part in common
		if seq >= 0 && seq < int64(len(at)) {
			return at[seq]
		}
		return seq
	}
	if !recordsAfter {
		return growth{same: true, moved: within}
	}
	next := int64(len(old))
	if len(old) > 0 {
		next = old[len(old)-1].Seq + 1
	}
	var tail []eventlog.Event
	if n < len(eff) {
		if n == 0 {
			return growth{} // nothing in common to roll back to
		}
		data, _ := importer.Marshal(importer.Obj{"to", at[n-1], "label", growLabel, "reason", "import: the source grew; what its end had closed is undone"})
		tail = append(tail, eventlog.Event{Seq: next, Type: eventlog.TypeRollback, Time: events[n-1].Time, Data: data})
		next++
	}
	// moved maps a seq of the new import to the session's.
	base := next - int64(n)
	moved := func(seq int64) int64 {
		if seq < int64(n) {
			return within(seq)
		}
		return seq + base
	}
	for _, e := range events[n:] {
		e.Seq = moved(e.Seq)
		if e.Type == eventlog.TypeRollback {
			e.Data = movedRollback(e.Data, moved)
		}
		tail = append(tail, e)
	}
	return growth{ok: true, tail: tail, moved: moved}
}

// sameEvent reports whether a and b are the same event but for the seq.
func sameEvent(a, b eventlog.Event) bool {
	return a.Type == b.Type && a.Time == b.Time && bytes.Equal(a.Data, b.Data)
}

// movedRollback is a rollback's data with its "to" moved.
func movedRollback(data json.RawMessage, moved func(int64) int64) json.RawMessage {
	var d map[string]json.RawMessage
	var to int64
	if json.Unmarshal(data, &d) != nil || json.Unmarshal(d["to"], &to) != nil {
		return data
	}
	d["to"], _ = json.Marshal(moved(to))
	out, err := json.Marshal(d)
	if err != nil {
		return data
	}
	return out
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

// verify reopens session id, reads and checks its whole log (every row,
// whatever the open trusted), and checks that it holds events events.
func (imp *importRun) verify(ctx context.Context, id string, events int64) error {
	h, err := imp.st.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return fmt.Errorf("import: verifying %s: %w", id, err)
	}
	defer h.Close()
	var got int64
	for _, err := range h.Read(ctx, 0, handle.End) {
		if err != nil {
			return fmt.Errorf("import: verifying %s: %w", id, err)
		}
		got++
	}
	if got != events || h.Seq()+1 != events {
		return fmt.Errorf("import: verifying %s: %d events, want %d", id, got, events)
	}
	return nil
}
