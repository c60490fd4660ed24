package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/importers"
	"github.com/sessionlog/sessionlog/internal/importers/claude"
	"github.com/sessionlog/sessionlog/internal/importers/dsh"
	"github.com/sessionlog/sessionlog/internal/importers/swe"
)

// importFormats are the --from values of SPEC §10.
var importFormats = []string{"sessionlog", "claude", "codex", "dsh", "swe-agent"}

// foreignFormats are the --from values read by a converter of
// internal/importers. codex is not among them: no Codex CLI trace is at
// hand to build and test a converter against.
var foreignFormats = map[string]importers.Format{
	claude.Name: claude.Format,
	dsh.Name:    dsh.Format,
	swe.Name:    swe.Format,
}

func (a *app) newImportCmd() *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "import [--from sessionlog|claude|codex|dsh|swe-agent] FILE|DIR",
		Short: "Import a sessionlog file, or a Claude Code, dsh or SWE-agent trace, into --dir",
		Long: `Import creates sessions in --dir from FILE, or from every file of the format
in DIR, and prints one line {"id","path","events","source"} per session
created ("source" is the file it came from).

--from sessionlog (the default) reads a sessionlog log file (an export, say;
raw, or zstd when its name ends in .zst) and creates the session under the
same ID, with the same labels and createdAt, holding its logical log: every
event, appended in batches and flushed, so its cat --json equals the file's.
It names no parent: a fork's inherited events (read from the file's folder)
become its own rows. An ID that --dir holds already is refused (exit 2). A
DIR is every *.jsonl and *.jsonl.zst directly in it.

--from claude (Claude Code transcripts, *.jsonl; a transcript's subagents in
<name>/subagents/ come with it, each a child session of the tool call that
ran it), --from dsh (DeepSeek Harness session logs, *.jsonl) and --from
swe-agent (SWE-agent trajectories, *.traj) convert the trace into the agent
vocabulary (docs/cli.md tells the mapping) and create each session under a
new ID, labelled source=<format> and sourceFile=<name>. A DIR is walked
recursively. --from codex is not implemented yet (exit 2).

A trace without events makes no session (a note on stderr says so). A file
that is not of the format (or corrupt) exits 1; a missing file or a folder
without files of the format exits 2. Either way nothing is left behind: an
import that fails removes every session it created.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runImport(cmd.Context(), args[0], from)
		},
	}
	cmd.Flags().StringVar(&from, "from", "sessionlog", "format of FILE|DIR: sessionlog, claude, dsh or swe-agent (codex: not implemented yet)")
	return cmd
}

// importResult is what `logtool import` prints for each session created.
type importResult struct {
	ID     string `json:"id"`
	Path   string `json:"path"`
	Events int64  `json:"events"`
	Source string `json:"source"`
}

func (a *app) runImport(ctx context.Context, path, from string) (err error) {
	f, foreign := foreignFormats[from]
	switch {
	case from == "sessionlog" || foreign:
	case slices.Contains(importFormats, from):
		return notImplemented("import --from " + from)
	default:
		return usageErrorf("--from %q: want one of %s", from, strings.Join(importFormats, ", "))
	}
	fi, err := a.fs.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: no file or folder %q", handle.ErrNotFound, path)
	case err != nil:
		return fmt.Errorf("%q: %w", path, err)
	case !fi.IsDir() && !fi.Mode().IsRegular():
		// Never opened: a FIFO's open would block, a device be endless.
		return fmt.Errorf("%w: %q is not a file or folder (%s)", handle.ErrNotRegular, path, fi.Mode().Type())
	}

	imp := &importer{st: a.store(), stderr: a.stderr}
	if foreign {
		err = imp.foreign(ctx, a.fs, f, path)
	} else {
		err = imp.sessionlogs(ctx, a.fs, path, fi.IsDir())
	}
	if err != nil {
		return imp.undo(ctx, err)
	}
	for _, r := range imp.done {
		if err := writeJSON(a.stdout, r); err != nil {
			return err
		}
	}
	return nil
}

// importer creates the sessions of one import and remembers them, so a
// failure can remove them all.
type importer struct {
	st     *handle.FileStore
	stderr io.Writer // for the notes of skipped traces
	done   []importResult
}

// undo removes the sessions created so far, children before their parents,
// and returns err.
func (imp *importer) undo(ctx context.Context, err error) error {
	ctx = context.WithoutCancel(ctx) // leave nothing behind, even when interrupted
	for i := len(imp.done) - 1; i >= 0; i-- {
		id := imp.done[i].ID
		if derr := imp.st.Delete(ctx, id); derr != nil {
			return fmt.Errorf("%w (and removing the imported session %s failed: %v)", err, id, derr)
		}
	}
	imp.done = nil
	return err
}

// sessionlogs imports a sessionlog file, or every *.jsonl[.zst] directly in
// a folder, in name order.
func (imp *importer) sessionlogs(ctx context.Context, fsys afero.Fs, path string, isDir bool) error {
	files := []string{path}
	if isDir {
		entries, err := afero.ReadDir(fsys, path)
		if err != nil {
			return err
		}
		files = nil
		for _, e := range entries {
			if e.Mode().IsRegular() && (strings.HasSuffix(e.Name(), rawExt) || strings.HasSuffix(e.Name(), zstdExt)) {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return usageErrorf("no *%s or *%s file in %q", rawExt, zstdExt, path)
		}
	}
	for _, file := range files {
		if err := imp.sessionlog(ctx, fsys, file); err != nil {
			return err
		}
	}
	return nil
}

// sessionlog imports one sessionlog file under its own ID.
func (imp *importer) sessionlog(ctx context.Context, fsys afero.Fs, file string) error {
	src, err := handle.NewFileStore(fsys, filepath.Dir(file)).OpenPath(ctx, file)
	if err != nil {
		return err
	}
	defer src.Close()
	last := src.Seq() // the log as it is now
	hdr := src.Header()

	opts := []handle.CreateOption{handle.WithID(hdr.ID), handle.WithCreatedAt(hdr.CreatedAt)}
	if len(hdr.Labels) > 0 {
		opts = append(opts, handle.WithLabels(hdr.Labels))
	}
	dst, err := imp.st.Create(ctx, opts...)
	if err != nil {
		return err
	}
	res := importResult{ID: dst.ID(), Path: dst.Path(), Source: file}
	res.Events, err = copyEvents(ctx, dst, src, last)
	return imp.finish(ctx, dst, res, err)
}

// finish closes a session just written; it counts as created (so undo
// removes it) when that went well, and is removed at once otherwise.
func (imp *importer) finish(ctx context.Context, dst handle.Handle, res importResult, err error) error {
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if derr := imp.st.Delete(context.WithoutCancel(ctx), dst.ID()); derr != nil {
			return fmt.Errorf("%w (and removing the partial session %s failed: %v)", err, dst.ID(), derr)
		}
		return err
	}
	imp.done = append(imp.done, res)
	return nil
}

// copyEvents appends src's logical log, events 0..last, to the empty write
// handle dst in batches, each checked to land at its seq (AppendAt) and
// flushed, and returns how many events it copied.
func copyEvents(ctx context.Context, dst, src handle.Handle, last int64) (int64, error) {
	return eachBatch(ctx, src, last, func(batch []eventlog.Event) error {
		if _, err := dst.AppendAt(ctx, batch[0].Seq, batch...); err != nil {
			return err
		}
		return dst.Flush(ctx)
	})
}

// foreign imports the traces of format f in path (a file, or a folder
// walked recursively), unit by unit: a file's session first, then its
// sub-sessions as its children.
func (imp *importer) foreign(ctx context.Context, fsys afero.Fs, f importers.Format, path string) error {
	units, err := importers.Units(fsys, f, path)
	if errors.Is(err, importers.ErrNoFiles) {
		return usageError(err)
	}
	if err != nil {
		return err
	}
	for _, u := range units {
		sessions, err := importers.Convert(fsys, f, u)
		if errors.Is(err, importers.ErrFormat) {
			return &exitError{code: exitFailed, err: fmt.Errorf("import --from %s: %w", f.Name, err)}
		}
		if err != nil {
			return err
		}
		ids := make([]string, len(sessions))
		for i, s := range sessions {
			if len(s.Events) == 0 {
				// A trace without events (a Claude Code file of summaries,
				// say) makes no session.
				fmt.Fprintf(imp.stderr, "logtool: import: skipped %s: no events\n", s.Source)
				continue
			}
			var parent *eventlog.Parent
			if l := s.Parent; l != nil && ids[l.Index] != "" {
				parent = &eventlog.Parent{ID: ids[l.Index], Seq: l.Seq, Mode: eventlog.ModeChild, Call: l.Call}
			}
			if ids[i], err = imp.write(ctx, s, parent); err != nil {
				return err
			}
		}
	}
	return nil
}

// write creates a session under a new ID holding s's events, appended in
// batches, each checked to land at its seq and flushed, and returns its ID.
func (imp *importer) write(ctx context.Context, s importers.Session, parent *eventlog.Parent) (string, error) {
	opts := []handle.CreateOption{handle.WithCreatedAt(s.CreatedAt), handle.WithLabels(s.Labels)}
	if parent != nil {
		opts = append(opts, handle.WithParent(*parent))
	}
	dst, err := imp.st.Create(ctx, opts...)
	if err != nil {
		return "", err
	}
	res := importResult{ID: dst.ID(), Path: dst.Path(), Events: int64(len(s.Events)), Source: s.Source}
	err = appendBatches(ctx, dst, s.Events)
	return dst.ID(), imp.finish(ctx, dst, res, err)
}

// appendBatches appends events (seqs from 0) to the empty write handle dst
// in batches of at most batchEvents events or about batchBytes bytes, each
// flushed.
func appendBatches(ctx context.Context, dst handle.Handle, events []eventlog.Event) error {
	for start := 0; start < len(events); {
		end, size := start, 0
		for end < len(events) && end-start < batchEvents && size < batchBytes {
			size += eventlog.RowSize(events[end])
			end++
		}
		if _, err := dst.AppendAt(ctx, int64(start), events[start:end]...); err != nil {
			return err
		}
		if err := dst.Flush(ctx); err != nil {
			return err
		}
		start = end
	}
	return nil
}
