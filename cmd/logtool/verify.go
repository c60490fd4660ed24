package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/chatview"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// Kinds of verify errors (docs/cli.md).
const (
	kindCorrupt = "corrupt"
	kindVersion = "version"
	kindDigest  = "digest"
	kindLineage = "lineage"
	kindIO      = "io"
)

func (a *app) newVerifyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--json] SESSION|DIR...",
		Short: "Check logs: structure, lineage, every checkpoint digest",
		Long: `Verify reads every row of each log and checks the format: the header, every
row's shape, the seq rule; then the logical log (a fork's parent must hold the
fork point) and every checkpoint: its log digest, and its state digest when it
names a projection logtool knows (agent/v1, transcript/v1; others are counted
as unchecked). A DIR verifies every <ID>.jsonl[.zst] in it. A torn tail alone
is ok. --json prints one object a file:
{"path","id","ok","events","fileEvents","torn","checkpoints","unchecked",
"error"}: events counts the logical log (a fork's inherited events included,
as stat and ls count it), fileEvents the events of the file's own rows; torn
null or {"offset","bytes"}, error null or {"kind","seq","offset","message"},
kind one of corrupt, version, digest, lineage, io (io also for an entry
refused as not a regular file: a folder, FIFO, device or link named like a
session).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runVerify(cmd.Context(), args, asJSON, a.stdout)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a file")
	return cmd
}

// verifyResult is one file's line of `verify --json`.
type verifyResult struct {
	Path        string       `json:"path"`
	ID          *string      `json:"id"` // null when neither the header nor the file name tells
	OK          bool         `json:"ok"`
	Events      int64        `json:"events"`     // events of the logical log checked (a fork's inherited ones included)
	FileEvents  int64        `json:"fileEvents"` // events of the file's own rows checked
	Torn        *tornJSON    `json:"torn"`
	Checkpoints int64        `json:"checkpoints"`
	Unchecked   int64        `json:"unchecked"`
	Error       *verifyError `json:"error"`
}

type tornJSON struct {
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

type verifyError struct {
	Kind    string `json:"kind"`
	Seq     *int64 `json:"seq"`    // null when unknown
	Offset  *int64 `json:"offset"` // null when unknown
	Message string `json:"message"`
}

func (a *app) runVerify(ctx context.Context, args []string, asJSON bool, out io.Writer) error {
	write := func(res verifyResult) error {
		if asJSON {
			return writeJSON(out, res)
		}
		return writeVerifyHuman(out, res)
	}
	if a.remote() {
		failed, n, err := a.verifyRemote(ctx, args, write)
		if err == nil && failed > 0 {
			err = failedf("verify: %d of %d sessions failed", failed, n)
		}
		return err
	}
	paths, err := a.verifyPaths(args)
	if err != nil {
		return err
	}
	failed := 0
	bar := a.verifyProgress(paths)
	defer bar.finish()
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		res := a.verifyFile(ctx, p)
		if !res.OK {
			failed++
		}
		if err := bar.above(func() error { return write(res) }); err != nil {
			return err
		}
		bar.add(a.fileSize(p))
	}
	if failed > 0 {
		return failedf("verify: %d of %s failed", failed, plural(int64(len(paths)), "file"))
	}
	return nil
}

// verifyPaths resolves the arguments to files, before any is read: a
// folder gives its *.jsonl files in name order.
func (a *app) verifyPaths(args []string) ([]string, error) {
	var paths []string
	for _, arg := range args {
		if fi, err := a.fs.Stat(arg); err == nil && fi.IsDir() {
			entries, err := afero.ReadDir(a.fs, arg)
			if err != nil {
				return nil, fmt.Errorf("read folder %q: %w", arg, err)
			}
			for _, e := range entries {
				// Whatever is named like a session: one that is not a
				// regular file is reported as refused, not left out.
				if _, _, ok := handle.ParseFileName(e.Name()); ok {
					paths = append(paths, filepath.Join(arg, e.Name()))
				}
			}
			continue
		}
		s, err := a.resolve(arg)
		if errors.Is(err, handle.ErrDuplicate) || errors.Is(err, handle.ErrNotRegular) {
			// The store refuses the session (both encodings hold
			// different logs, or a file of it is not a regular file):
			// verify its files, so the refusal is reported file by file.
			for _, ext := range []string{rawExt, zstdExt} {
				if p := filepath.Join(a.store().Dir(), arg+ext); a.exists(p) {
					paths = append(paths, p)
				}
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		paths = append(paths, s.path)
	}
	return paths, nil
}

// verifyFile reads the log at path row by row and reports what it found.
// The header's ID must match a <ULID>.jsonl[.zst] file name.
func (a *app) verifyFile(ctx context.Context, path string) verifyResult {
	res := verifyResult{Path: path}
	if id, _, ok := handle.ParseFileName(filepath.Base(path)); ok {
		res.ID = &id
		// A file the store refuses (docs/format.md §2: both encodings of the ID,
		// holding different logs; or not a regular file) is not a clean
		// log, whatever its rows — and is never opened.
		if _, err := handle.NewFileStore(a.fs, filepath.Dir(path)).Path(id); err != nil {
			res.Error = verifyErrorOf(err)
			return res
		}
	}
	c := handle.NewFileStore(a.fs, filepath.Dir(path)).CheckPath(ctx, path, nil)
	if c.Header.ID != "" {
		res.ID = &c.Header.ID
	}
	res.Events, res.FileEvents = c.Events, c.Events
	if p := c.Header.Parent; p != nil && p.Mode == eventlog.ModeFork {
		res.Events += p.Seq + 1 // the logical log, as stat and ls count it (docs/cli.md)
	}
	if c.Err != nil {
		res.Error = verifyErrorOf(c.Err)
		return res
	}
	if t := c.Torn; t != nil {
		res.Torn = &tornJSON{Offset: t.Offset, Bytes: t.Bytes}
	}
	// The structure is sound: now the logical log (a fork's parent
	// included) and every checkpoint's digests.
	h, err := handle.NewFileStore(a.fs, filepath.Dir(path)).OpenPath(ctx, path)
	if err != nil {
		res.Error = verifyErrorOf(err)
		return res
	}
	defer h.Close()
	rr, err := checkpoint.Verify(ctx, h, projection.Verifiable()...)
	res.Checkpoints, res.Unchecked = int64(rr.Checkpoints), int64(rr.Unchecked)
	if err != nil {
		res.Error = verifyErrorOf(err)
		return res
	}
	res.OK = true
	return res
}

// verifyErrorOf classifies an error that ended a read.
func verifyErrorOf(err error) *verifyError {
	var ce *eventlog.CorruptError
	var ve *eventlog.VersionError
	var de *replay.DigestError
	switch {
	case errors.As(err, &de):
		return &verifyError{Kind: kindDigest, Seq: &de.Seq, Message: err.Error()}
	case errors.Is(err, handle.ErrLineage):
		return &verifyError{Kind: kindLineage, Message: err.Error()}
	case errors.As(err, &ce):
		out := &verifyError{Kind: kindCorrupt, Message: err.Error()}
		if ce.Offset >= 0 {
			out.Offset = &ce.Offset
		}
		if ce.Seq >= 0 {
			out.Seq = &ce.Seq
		}
		return out
	case errors.As(err, &ve):
		zero := int64(0)
		return &verifyError{Kind: kindVersion, Offset: &zero, Message: err.Error()}
	case errors.Is(err, handle.ErrDuplicate):
		return &verifyError{Kind: kindCorrupt, Message: err.Error()}
	default: // I/O errors, and a file refused as not regular (handle.ErrNotRegular)
		return &verifyError{Kind: kindIO, Message: err.Error()}
	}
}

// exists reports whether there is a file at path, without following a
// final link (a dangling link exists).
func (a *app) exists(path string) bool {
	if l, ok := a.fs.(afero.Lstater); ok {
		_, _, err := l.LstatIfPossible(path)
		return err == nil
	}
	_, err := a.fs.Stat(path)
	return err == nil
}

// writeVerifyHuman writes one line a file: ok or FAIL, the path, and what
// was found.
func writeVerifyHuman(w io.Writer, res verifyResult) error {
	id := "-"
	if res.ID != nil {
		id = *res.ID
	}
	var msg string
	switch {
	case res.Error != nil:
		msg = fmt.Sprintf("FAIL  %s  %s  %s: %s", res.Path, id, res.Error.Kind, res.Error.Message)
	default:
		msg = fmt.Sprintf("ok    %s  %s  %s", res.Path, id, chatview.Plural(res.Events, "event", ""))
		if res.FileEvents != res.Events {
			msg += fmt.Sprintf(" (%s in this file, the rest inherited)", chatview.Thousands(res.FileEvents))
		}
		if res.Torn != nil {
			msg += fmt.Sprintf("; torn tail of %s at offset %d (never acknowledged; cut by the next append or repair)",
				chatview.Plural(res.Torn.Bytes, "byte", ""), res.Torn.Offset)
		}
	}
	_, err := fmt.Fprintln(w, oneLine(msg))
	return err
}
