package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// importFormats are the --from values of SPEC §10; only the first is
// implemented.
var importFormats = []string{"sessionlog", "claude", "codex", "dsh", "swe-agent"}

func (a *app) newImportCmd() *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "import [--from sessionlog] FILE",
		Short: "Import a sessionlog file (an export, say) into --dir under its own ID",
		Long: `Import reads a sessionlog log file (an export, say; raw, or zstd when its name
ends in .zst) and creates the session in --dir under the same ID, with the same
labels, holding its logical log: every event, appended in batches and flushed.
The new session's cat --json equals the file's. It names no parent: a fork's
inherited events (read from the file's folder) become its own rows, as export
writes them. createdAt is kept. It prints
{"id","path","events"}. An ID that --dir holds already is refused (exit 2).
The other --from formats (claude, codex, dsh, swe-agent) are not implemented
yet.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runImport(cmd.Context(), args[0], from)
		},
	}
	cmd.Flags().StringVar(&from, "from", "sessionlog", "format of FILE: sessionlog (claude, codex, dsh, swe-agent: not implemented yet)")
	return cmd
}

// importResult is what `logtool import` prints.
type importResult struct {
	ID     string `json:"id"`
	Path   string `json:"path"`
	Events int64  `json:"events"`
}

func (a *app) runImport(ctx context.Context, file, from string) (err error) {
	switch {
	case from == "sessionlog":
	case slices.Contains(importFormats, from):
		return notImplemented("import --from " + from)
	default:
		return usageErrorf("--from %q: want one of sessionlog, claude, codex, dsh, swe-agent", from)
	}
	fi, err := a.fs.Stat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: no file %q", handle.ErrNotFound, file)
	case err != nil:
		return fmt.Errorf("%q: %w", file, err)
	case fi.IsDir():
		return notImplemented("import of a folder")
	}
	src, err := handle.NewFileStore(a.fs, filepath.Dir(file)).OpenPath(ctx, file)
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
	st := a.store()
	dst, err := st.Create(ctx, opts...)
	if err != nil {
		return err
	}
	res := importResult{ID: dst.ID(), Path: dst.Path()}
	res.Events, err = copyEvents(ctx, dst, src, last)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Leave no half-imported session behind, even when interrupted.
		if derr := st.Delete(context.WithoutCancel(ctx), dst.ID()); derr != nil {
			return fmt.Errorf("%w (and removing the partial session %s failed: %v)", err, dst.ID(), derr)
		}
		return err
	}
	return writeJSON(a.stdout, res)
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
