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

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/transfer"
)

func (a *app) newExportCmd() *cobra.Command {
	var to int64
	var out string
	var asJSON, clear bool
	cmd := &cobra.Command{
		Use:   "export [--to S] [--out FILE [--json]] [--clear] SESSION",
		Short: "Write a session (up to seq S) as a standalone raw file",
		Long: `Export writes SESSION's logical log up to seq S (default: all of it) as a
standalone raw session: the header keeps the ID, createdAt and labels but
names no parent, and every event, a fork's inherited ones included, is a
row. Its cat --json is byte-identical to SESSION's (up to S), and it
verifies on its own (checkpoint digests cover the logical log). It goes to
stdout, or with --out FILE to FILE, atomically (temp file, fsync, rename),
then prints {"id","path","events","lastSeq"}. An existing FILE, a name
ending in .zst or named after another session is refused. A sealed
session's export is sealed for the same recipients; --clear writes it in
clear.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("to") {
				to = handle.End
			}
			return a.runExport(cmd.Context(), args[0], to, out, asJSON, clear)
		},
	}
	seqFlag(cmd.Flags(), &to, "to", "last seq to export (inclusive; default: the last event)")
	cmd.Flags().StringVar(&out, "out", "", "write to `FILE`, atomically, instead of stdout")
	cmd.Flags().BoolVar(&clear, "clear", false, "export a sealed session's content in clear")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// exportResult is what `logtool export --out FILE` prints.
type exportResult struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	Events  int64  `json:"events"`
	LastSeq int64  `json:"lastSeq"`
}

func (a *app) runExport(ctx context.Context, arg string, to int64, out string, asJSON, clear bool) error {
	if to < 0 {
		return usageErrorf("--to %d: want a seq >= 0", to)
	}
	_, src, err := a.openArg(ctx, arg)
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
		return usageErrorf("--to %d: the session %s", to, holdsWords(last))
	}
	export := func(w io.Writer) (int64, error) { return transfer.Export(ctx, src, w, to) }
	if st, id, ok := a.sealedSession(ctx, arg); ok && !clear {
		// A sealed session's export is sealed too, for the same
		// recipients (docs/format.md §11); --clear writes the content.
		export = func(w io.Writer) (int64, error) { return st.ExportSealed(ctx, id, w, to) }
	}
	if out == "" {
		w := bufio.NewWriterSize(a.stdout, 64<<10)
		_, err := export(w)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		return err
	}
	var n int64
	err = file.WriteFileAtomic(a.fs, out, func(w io.Writer) error {
		var err error
		n, err = export(w)
		return err
	})
	if err != nil {
		return err
	}
	res := exportResult{ID: src.ID(), Path: out, Events: n, LastSeq: n - 1}
	return a.printResult(asJSON, res, func() string { return humanExport(res) })
}

// checkExportOut refuses an --out that exists, or whose name would make
// readers misread the file: a zstd name (the export is raw) or the name of
// another session's log.
func (a *app) checkExportOut(out, id string) error {
	base := filepath.Base(out)
	if strings.HasSuffix(base, ".zst") {
		return usageErrorf("--out %q: an export is raw; a name ending in .zst would be read as zstd", out)
	}
	if named, _, ok := file.ParseFileName(base); ok && named != id {
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
