package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
)

// importFormats are the --from values: sessionlog, then the formats of the
// built-in importers.
func importFormats() []string {
	return append([]string{"sessionlog"}, formats.Registry().Names()...)
}

func (a *app) newImportCmd() *cobra.Command {
	var (
		from, progress  string
		skipBad, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "import [--from sessionlog|claude|codex|dsh|swe-agent] [--skip-bad] [--json] FILE|DIR",
		Short: "Import a sessionlog file, or a Claude Code, Codex, dsh or SWE-agent trace, into --dir",
		Long: `Import creates sessions in --dir from FILE, or from every file of the format
in DIR, and prints one line {"id","path","events","source",…} per session
("source" is the file it came from).

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
recursively. --from codex reads Codex CLI rollouts (rollout-*.jsonl); a fork
whose parent rollout is in the same import becomes its child session. Every
source record is kept: the source can be rebuilt from the session.

A foreign import goes file by file. A bad line N stops that file's import
before it: the lines before it are imported, verified and labelled partial=N,
and stderr names the file, the line and what to do; --skip-bad imports past
each bad line instead, reporting it. A torn last line is left out and
reported. A file that is not of the format is refused (nothing is kept of
it) and the others are imported. The exit status is 1 when a file was
refused or cut short. Importing a source again skips it when nothing
changed ("status":"unchanged") and appends the new events when it grew
("status":"appended"). On a terminal, stderr shows progress and a summary
table (--progress always|never to force it either way).

A sessionlog import is all or nothing: a file that is not a log (or is
corrupt) exits 1, and every session the import created is removed. A missing
file or a folder without files of the format exits 2.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runImport(cmd.Context(), args[0], from, skipBad, progress, asJSON)
		},
	}
	cmd.Flags().StringVar(&from, "from", "sessionlog", "format of FILE|DIR: sessionlog, claude, codex, dsh or swe-agent")
	cmd.Flags().BoolVar(&skipBad, "skip-bad", false, "import past the bad lines of a trace, each reported, instead of stopping before the first")
	cmd.Flags().StringVar(&progress, "progress", "auto", "progress and a summary on stderr: auto (on a terminal), always or never")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// importResult is what `logtool import` prints for each session.
type importResult struct {
	ID     string `json:"id"`
	Path   string `json:"path"`
	Events int64  `json:"events"`
	Source string `json:"source"`
	// Of a foreign trace only (docs/cli.md): created, appended or
	// unchanged; the source's records and bytes, the records kept; the
	// line a damaged source was cut before.
	Status      string `json:"status,omitempty"`
	Records     int    `json:"records,omitempty"`
	Kept        int    `json:"kept,omitempty"`
	SourceBytes int64  `json:"sourceBytes,omitempty"`
	Partial     int    `json:"partial,omitempty"`
}

func (a *app) runImport(ctx context.Context, path, from string, skipBad bool, progress string, asJSON bool) (err error) {
	f, ferr := formats.Registry().Lookup(from)
	foreign := ferr == nil
	if from != "sessionlog" && !foreign {
		return usageErrorf("--from %q: want one of %s", from, strings.Join(importFormats(), ", "))
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

	show, err := a.showProgress(progress)
	if err != nil {
		return err
	}
	st, err := a.sessions(ctx)
	if err != nil {
		return err
	}
	imp := &importRun{st: st, stderr: a.stderr, keys: map[string]eventlog.Parent{}, progress: newImportProgress(a.stderr, show)}
	if foreign {
		var opts []importer.Option
		if skipBad {
			opts = append(opts, importer.SkipBad())
		}
		err = imp.foreign(ctx, a.fs, f, path, opts...)
	} else {
		err = imp.sessionlogs(ctx, a.fs, path, fi.IsDir())
	}
	if err != nil {
		imp.progress.clear()
		return imp.undo(ctx, err)
	}
	results := imp.done
	if foreign {
		results = imp.results
	}
	for _, r := range results {
		if err := a.printResult(asJSON, r, func() string { return humanImport(r) }); err != nil {
			return err
		}
	}
	if err := imp.progress.summary(ctx, imp.st, results); err != nil {
		return err
	}
	if imp.failed > 0 {
		return failedf("import --from %s: %d of the files could not be imported whole (see above)", from, imp.failed)
	}
	return nil
}

// importRun creates the sessions of one import and remembers them, so a
// failure can remove them all.
type importRun struct {
	st     sessionStore
	stderr io.Writer                  // for the notes of damaged traces
	done   []importResult             // sessions created, for undo
	keys   map[string]eventlog.Parent // Session.Key → its session and last seq

	results  []importResult // of a foreign import: every session, whatever its status
	failed   int            // files refused or cut short
	progress *importProgress
}

// undo removes the sessions created so far, children before their parents,
// and returns err.
func (imp *importRun) undo(ctx context.Context, err error) error {
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
func (imp *importRun) sessionlogs(ctx context.Context, fsys afero.Fs, path string, isDir bool) error {
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
func (imp *importRun) sessionlog(ctx context.Context, fsys afero.Fs, file string) error {
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
func (imp *importRun) finish(ctx context.Context, dst handle.Handle, res importResult, err error) error {
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

// showProgress decides whether import shows progress and a summary on
// stderr: --progress always or never, or auto (the default): when stderr
// is a terminal.
func (a *app) showProgress(mode string) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		f, ok := a.stderr.(*os.File)
		if !ok {
			return false, nil
		}
		fi, err := f.Stat()
		return err == nil && fi.Mode()&os.ModeCharDevice != 0, nil
	}
	return false, usageErrorf("--progress %q: want auto, always or never", mode)
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

// appendBatches appends events (contiguous seqs, the first the next of
// dst's) to the write handle dst in batches of at most batchEvents events
// or about batchBytes bytes, each checked to land at its seq and flushed.
func appendBatches(ctx context.Context, dst handle.Handle, events []eventlog.Event) error {
	for start := 0; start < len(events); {
		end, size := start, 0
		for end < len(events) && end-start < batchEvents && size < batchBytes {
			size += eventlog.RowSize(events[end])
			end++
		}
		if _, err := dst.AppendAt(ctx, events[start].Seq, events[start:end]...); err != nil {
			return err
		}
		if err := dst.Flush(ctx); err != nil {
			return err
		}
		start = end
	}
	return nil
}
