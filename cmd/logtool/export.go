package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// Batches in which export encodes rows and import appends events: whichever
// limit is reached first.
const (
	batchEvents = 1024
	batchBytes  = 1 << 20
)

func (a *app) newExportCmd() *cobra.Command {
	var to int64
	var out string
	cmd := &cobra.Command{
		Use:   "export [--to S] [--out FILE] SESSION",
		Short: "Write a session's logical log (up to seq S) as a standalone raw session",
		Long: `Export writes SESSION's logical log, up to seq S inclusive (default: all of
it), as a standalone raw session: the header keeps the session's id, createdAt
and labels but names no parent, and every event, a fork's inherited ones
included, is a row of the file. Its cat --json is byte-identical to SESSION's
(up to S), and it verifies on its own: checkpoint digests cover the logical
log, so those up to S stay valid. It goes to stdout, or with --out FILE to
FILE, written atomically (temp file, fsync, rename, fsync of the folder) and
then described as {"id","path","events","lastSeq"}. An existing FILE is
refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("to") {
				to = handle.End
			}
			return a.runExport(cmd.Context(), args[0], to, out)
		},
	}
	cmd.Flags().Int64Var(&to, "to", 0, "last seq to export (inclusive; default: the last event)")
	cmd.Flags().StringVar(&out, "out", "", "write to FILE, atomically, instead of stdout")
	return cmd
}

// exportResult is what `logtool export --out FILE` prints.
type exportResult struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	Events  int64  `json:"events"`
	LastSeq int64  `json:"lastSeq"`
}

func (a *app) runExport(ctx context.Context, arg string, to int64, out string) error {
	if to < 0 {
		return usageErrorf("--to %d: want a seq >= 0", to)
	}
	s, err := a.resolve(arg)
	if err != nil {
		return err
	}
	src, err := a.openLog(ctx, s)
	if err != nil {
		return err
	}
	defer src.Close()
	if out != "" {
		if err := a.checkExportOut(out, src.ID()); err != nil {
			return err
		}
	}
	// The log as it is now: a writer may append while we read.
	last := src.Seq()
	switch {
	case to == handle.End:
		to = last
	case to > last:
		return usageErrorf("--to %d: the session's events are 0..%d", to, last)
	}
	if out == "" {
		w := bufio.NewWriterSize(a.stdout, 64<<10)
		_, err := writeExport(ctx, w, src, to)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		return err
	}
	var n int64
	err = a.writeAtomic(out, func(w io.Writer) error {
		var err error
		n, err = writeExport(ctx, w, src, to)
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(a.stdout, exportResult{ID: src.ID(), Path: out, Events: n, LastSeq: n - 1})
}

// checkExportOut refuses an --out that exists, or whose name would make
// readers misread the file: a zstd name (the export is raw) or the name of
// another session's log.
func (a *app) checkExportOut(out, id string) error {
	base := filepath.Base(out)
	if strings.HasSuffix(base, ".zst") {
		return usageErrorf("--out %q: an export is raw; a name ending in .zst would be read as zstd", out)
	}
	if named, _, ok := handle.ParseFileName(base); ok && named != id {
		return usageErrorf("--out %q: named after session %s, but the export holds %s", out, named, id)
	}
	switch _, err := a.fs.Stat(out); {
	case err == nil:
		return usageErrorf("--out %q exists; remove it first or choose another name", out)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--out %q: %w", out, err)
	}
	return nil
}

// writeExport writes src's header, without its parent, and its logical
// log's events 0..to as rows, and returns how many events it wrote.
// Nothing is written before the first event (or the end) is read, so a
// fork whose lineage is broken fails before any output.
func writeExport(ctx context.Context, w io.Writer, src handle.Handle, to int64) (int64, error) {
	hdr := src.Header()
	hdr.Parent = nil
	hdr.Version = eventlog.Version
	line, err := eventlog.EncodeHeader(hdr)
	if err != nil {
		return 0, fmt.Errorf("export: header of %s: %w", src.ID(), err)
	}
	enc := eventlog.NewEncoder(nil)
	var (
		batch   []eventlog.Event
		size    int
		buf     []byte
		n       int64
		started bool
	)
	start := func() error {
		if started {
			return nil
		}
		started = true
		_, err := w.Write(append(line, '\n'))
		return err
	}
	flush := func() error {
		if err := start(); err != nil || len(batch) == 0 {
			return err
		}
		buf = enc.AppendRows(buf[:0], batch)
		batch, size = batch[:0], 0
		_, err := w.Write(buf)
		return err
	}
	for e, err := range src.Read(ctx, 0, to) {
		if err != nil {
			return n, err
		}
		if e.Seq != n {
			return n, fmt.Errorf("export: %s: event %d where %d was expected", src.Path(), e.Seq, n)
		}
		batch = append(batch, e)
		size += eventlog.RowSize(e)
		n++
		if len(batch) >= batchEvents || size >= batchBytes {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := flush(); err != nil {
		return n, err
	}
	if n != to+1 {
		return n, fmt.Errorf("export: %s: the log ended at seq %d, before seq %d", src.Path(), n-1, to)
	}
	return n, nil
}

// writeAtomic writes a new file at path through write: a temp file in the
// same folder, fsynced, renamed to path, then the folder fsynced. On any
// error the temp file is removed and path is untouched.
func (a *app) writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := afero.TempFile(a.fs, dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			a.fs.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 256<<10)
	if err := write(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write %q: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %q: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %q: %w", tmp, err)
	}
	if err := a.fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %q to %q: %w", tmp, path, err)
	}
	return a.syncDir(dir)
}

// syncDir fsyncs a folder, so that a rename in it survives a power cut.
func (a *app) syncDir(dir string) error {
	d, err := a.fs.Open(dir)
	if err != nil {
		return fmt.Errorf("open folder %q: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync folder %q: %w", dir, err)
	}
	return nil
}
