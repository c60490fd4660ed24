package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
	"github.com/sessionlog/sessionlog/ops/ingest"
)

// importFormats are the --from values: sessionlog, then the formats of the
// built-in importers.
func importFormats() []string {
	return append([]string{ingest.Sessionlog}, formats.Registry().Names()...)
}

func (a *app) newImportCmd() *cobra.Command {
	var (
		from, progress, encoding string
		skipBad, asJSON          bool
	)
	cmd := &cobra.Command{
		Use:   "import [--from sessionlog|claude|codex|dsh|swe-agent] [--encoding raw|zstd] [--skip-bad] [--progress auto|always|never] [--json] FILE|DIR...",
		Short: "Import sessionlog files and Claude Code, Codex, dsh or SWE-agent traces",
		Long: `Import brings each FILE, and every file of a known format under each DIR
(walked recursively), into the store, and prints one line a source:
{"id","path","events","source","format","status",...}. Without --from each
file's format is found by its content (an unknown or ambiguous file fails,
naming the formats tried).

A session's identity is the source's own session id, not its path: the
same source again, from any path, is "unchanged"; grown, "appended" (the
new events, at once or not at all); a new one "created", all or nothing
whenever the process dies; one that cannot be imported "failed", with its
"reason", and the others are imported; so does a path that does not
exist, or a folder with nothing to import. sessionlog files keep their ID,
labels, createdAt and encoding (--encoding makes new sessions raw or
zstd). Foreign traces become the agent vocabulary and keep every source
record (docs/import.md says what each record becomes). A damaged JSONL
trace is imported up to its first bad line (label partial), or past each
with --skip-bad; each is reported on stderr.

On a terminal, stderr shows a progress bar and a summary table. Exit 0
when every source was imported whole, 1 when one failed for its content or
was cut short, 2 for a missing path, a folder with nothing to import, an
unknown --from or --encoding.`,
		Example: `  $ logtool import ~/.claude/projects
  $ logtool import --from codex --skip-bad rollout.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runImport(cmd.Context(), args, importFlags{from: from, encoding: encoding, progress: progress, skipBad: skipBad, asJSON: asJSON})
		},
	}
	cmd.Flags().StringVar(&encoding, "encoding", "", "create every new session in this `encoding` (raw or zstd); default: a sessionlog file's own, the store's for a trace")
	cmd.Flags().StringVar(&from, "from", "", "read every file as this `format` (sessionlog, claude, codex, dsh, swe-agent); default: found by content")
	cmd.Flags().BoolVar(&skipBad, "skip-bad", false, "import past the bad lines of a trace, each reported, instead of stopping before the first")
	cmd.Flags().StringVar(&progress, "progress", "auto", "progress and a summary on stderr: `auto|always|never` (auto: on a terminal)")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// importResult is what `logtool import` prints for each session's source.
type importResult struct {
	ID     string `json:"id,omitempty"`
	Path   string `json:"path,omitempty"`
	Events int64  `json:"events,omitempty"`
	Source string `json:"source"`
	Format string `json:"format,omitempty"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Of a foreign trace only (docs/import.md): the source's records and
	// bytes, the records kept; the line a damaged source was cut before.
	Records     int   `json:"records,omitempty"`
	Kept        int   `json:"kept,omitempty"`
	SourceBytes int64 `json:"sourceBytes,omitempty"`
	Partial     int   `json:"partial,omitempty"`
}

func resultOf(r ingest.Result) importResult {
	out := importResult{ID: r.ID, Path: r.Path, Events: r.Events, Source: r.Source, Format: r.Format,
		Status: string(r.Status), Reason: r.Reason, Records: r.Records, Kept: r.Kept, SourceBytes: r.SourceBytes}
	if r.Partial != nil {
		out.Partial = r.Partial.Line
	}
	if r.Status == ingest.Failed {
		out.Reason = oneLine(r.Reason)
	}
	return out
}

// importFlags are import's flags.
type importFlags struct {
	from, encoding, progress string
	skipBad, asJSON          bool
}

func (a *app) runImport(ctx context.Context, paths []string, fl importFlags) error {
	from, asJSON := fl.from, fl.asJSON
	if from != "" && !slices.Contains(importFormats(), from) {
		return usageErrorf("--from %q: want one of %s", from, strings.Join(importFormats(), ", "))
	}
	switch fl.encoding {
	case "", handle.EncodingRaw, handle.EncodingZstd:
	default:
		return usageErrorf("--encoding %q: want %s or %s", fl.encoding, handle.EncodingRaw, handle.EncodingZstd)
	}
	show, err := a.showProgress(fl.progress)
	if err != nil {
		return err
	}
	st, err := a.creating(ctx)
	if err != nil {
		return err
	}
	bar := a.importBar(show)
	opts := []ingest.Option{ingest.WithFs(a.fs), ingest.WithProgress(bar.update)}
	opts = append(opts, ingest.WithSourceOptions(a.storeOptions()...))
	if a.noRedact {
		opts = append(opts, ingest.WithoutRedaction())
	}
	if from != "" {
		opts = append(opts, ingest.From(from))
	}
	if fl.skipBad {
		opts = append(opts, ingest.SkipBad())
	}
	if fl.encoding != "" {
		opts = append(opts, ingest.WithEncoding(fl.encoding))
	}
	sum, err := ingest.Import(ctx, st, paths, opts...)
	bar.finish()
	switch {
	case errors.Is(err, ingest.ErrUsage):
		return usageError(err)
	case err != nil:
		return err
	}
	cut := 0
	for _, r := range sum.Results {
		a.notes(r)
		if r.Partial != nil {
			cut++
		}
		res := resultOf(r)
		if err := a.printResult(asJSON, res, func() string { return humanImport(res) }); err != nil {
			return err
		}
	}
	if err := a.importSummary(ctx, show, sum); err != nil {
		return err
	}
	if sum.Failed > 0 || cut > 0 {
		return &exitError{code: importExit(sum), err: fmt.Errorf("import: %d of %s not imported whole (see above)",
			sum.Failed+cut, plural(int64(len(sum.Results)), "source"))}
	}
	return nil
}

// importExit is the exit status of an import some source of which failed
// or was cut short: 1 when each was for its content (not of the format,
// damaged, corrupt), else the status of the first other error (2 for the
// environment: a full disk, a session of the same ID in the way…).
func importExit(sum ingest.Summary) int {
	for _, r := range sum.Results {
		if r.Status != ingest.Failed || contentError(r.Err) {
			continue
		}
		if code := exitCode(r.Err); code != exitOK {
			return code
		}
	}
	return exitFailed
}

// contentError reports whether err is about what a source holds.
func contentError(err error) bool {
	for _, target := range []error{importer.ErrFormat, ingest.ErrUnknownFormat, ingest.ErrAmbiguous, eventlog.ErrCorrupt, eventlog.ErrVersion} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// notes says on stderr what was cut from a source, and how to get it
// back, or why it failed.
func (a *app) notes(r ingest.Result) {
	note := func(format string, args ...any) {
		fmt.Fprintf(a.stderr, "logtool: import: %s\n", oneLine(fmt.Sprintf(format, args...)))
	}
	if r.Status == ingest.Failed {
		note("%s: %s: not imported (nothing kept for it)", r.Source, strings.TrimPrefix(r.Reason, r.Source+": "))
		return
	}
	for _, bad := range r.Skipped {
		note("%v: skipped (--skip-bad); the rest of the file is in %s", bad, r.ID)
	}
	if t := r.Torn; t != nil {
		note("%s: line %d: torn last line (%d bytes at offset %d, no newline: a writer was cut off) left out; import again once it is whole", r.Source, t.Line, t.Bytes, t.Offset)
	}
	if p := r.Partial; p != nil {
		note("%v: imported the %d records before it as %s, labelled %s=%d; fix the line and import again, or pass --skip-bad to import past it", p, r.Records, r.ID, ingest.LabelPartial, p.Line)
	}
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
