package main

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/internal/app/chatview"
	"github.com/sessionlog/sessionlog/ops/storeurl"
	"github.com/sessionlog/sessionlog/ops/verify"
)

func (a *app) newVerifyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--json] SESSION|DIR|URL...",
		Short: "Check logs: structure, lineage, every checkpoint digest",
		Long: `Verify reads every row of each log and checks its structure (the header,
every zstd frame's checksum, every row's shape, the seq rule), the logical
log (a fork's parent must hold the fork point) and every checkpoint: its
log digest, and its state digest when it names a projection logtool knows
(agent/v1, transcript/v1; others are counted as unchecked). A DIR verifies
every <ID>.jsonl[.zst] in it, a store's URL every session of that store, a
path any log file. A torn tail alone is ok.

JSON, one object a file or session: {"path","id","ok","events",
"fileEvents","torn","checkpoints","unchecked","error","protection"}: events
counts the logical log, fileEvents the file's own rows; torn is null or
{"offset","bytes"}; protection says what keeps secrets out of the file,
{"sealed","redacted","escrowed"}: a sealed session, the strings redacted at
write, those of them whose original is sealed to the agent's key (provider
records; docs/format.md §11), null when the log could not be read;
error is null or {"kind","seq","offset","message"}
with kind corrupt, version, digest, lineage, io (an I/O error, or an
entry refused as not a regular file) or key (a sealed session no
--identity opens: its framing alone was checked). On a terminal one line a
file: ok or FAIL, the path, the ID and what was found. Exit 1 if any fails;
2 if the only failures are of kind key.`,
		Example: `  $ logtool verify sessions
  $ logtool verify --json nats://127.0.0.1:4222/prod`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runVerify(cmd.Context(), args, a.wantJSON(asJSON), a.stdout)
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func (a *app) runVerify(ctx context.Context, args []string, asJSON bool, out io.Writer) error {
	write := func(rep verify.Report) error {
		if asJSON {
			return writeJSON(out, rep)
		}
		return writeVerifyHuman(out, rep)
	}
	var jobs []verifyJob
	for _, arg := range args {
		var err error
		if jobs, err = a.verifyJobs(ctx, arg, jobs); err != nil {
			return err
		}
	}
	failed, noKey, n, files := 0, 0, int64(0), true
	bar := a.verifyProgress(jobs)
	defer bar.finish()
	for _, j := range jobs {
		files = files && j.file
		for rep, err := range j.reports(ctx) {
			if err != nil {
				return err
			}
			n++
			switch {
			case !rep.OK && rep.Error.Kind == verify.KindKey:
				noKey++ // what is missing is the identity: the environment's
			case !rep.OK:
				failed++
			}
			if err := bar.above(func() error { return write(rep) }); err != nil {
				return err
			}
		}
		bar.add(j.size)
	}
	what := "session"
	if files {
		what = "file"
	}
	switch {
	case failed > 0:
		return failedf("verify: %d of %s failed", failed+noKey, plural(n, what))
	case noKey > 0:
		return usageErrorf("verify: %d of %s sealed, and no identity given opens them: their framing alone was checked (--identity FILE or $%s)", noKey, plural(n, what), envIdentity)
	}
	return nil
}

// verifyJob is what one argument of verify names, before any of it is
// read: a file, a session of a store, or every session of a store.
type verifyJob struct {
	size    int64 // bytes to read, for the progress bar (0: unknown)
	file    bool  // a file named by its path
	reports func(context.Context) iter.Seq2[verify.Report, error]
}

// verifyJobs appends to jobs what arg names: a folder's files named like
// sessions (in name order), a log file, a store's URL (its every session),
// or a SESSION of the store (--dir or --store).
func (a *app) verifyJobs(ctx context.Context, arg string, jobs []verifyJob) ([]verifyJob, error) {
	fileJob := func(path string) verifyJob {
		return verifyJob{size: a.fileSize(path), file: true, reports: func(ctx context.Context) iter.Seq2[verify.Report, error] {
			return one(verify.File(ctx, a.fs, path, verify.WithStoreOptions(a.storeOptions()...)))
		}}
	}
	if storeurl.IsURL(arg) {
		st, closeFn, err := a.openStoreURL(ctx, arg)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, closeFn)
		return append(jobs, verifyJob{reports: func(ctx context.Context) iter.Seq2[verify.Report, error] {
			return verify.Store(ctx, st)
		}}), nil
	}
	if fi, err := a.fs.Stat(arg); err == nil && fi.IsDir() {
		paths, err := verify.Files(a.fs, arg)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			jobs = append(jobs, fileJob(p))
		}
		return jobs, nil
	}
	if a.isPath(arg) {
		if _, err := a.resolvePath(arg); err != nil {
			return nil, err
		}
		return append(jobs, fileJob(arg)), nil
	}
	s, err := a.resolve(arg) // a damaged log resolves: verify reports it
	if err != nil {
		return nil, err
	}
	id := s.id
	st, err := a.sessions(ctx)
	if err != nil {
		return nil, err
	}
	var size int64
	if info, err := st.Stat(ctx, id); err == nil {
		size = info.SizeBytes
	}
	return append(jobs, verifyJob{size: size, reports: func(ctx context.Context) iter.Seq2[verify.Report, error] {
		return one(verify.Session(ctx, st, id))
	}}), nil
}

// one is the stream of a single report.
func one(rep verify.Report) iter.Seq2[verify.Report, error] {
	return func(yield func(verify.Report, error) bool) { yield(rep, nil) }
}

// writeVerifyHuman writes one line a file: ok or FAIL, the path, and what
// was found.
func writeVerifyHuman(w io.Writer, res verify.Report) error {
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
		if p := res.Protection; p != nil && (p.Sealed || p.Redacted > 0) {
			msg += "; " + p.String()
		}
	}
	_, err := fmt.Fprintln(w, oneLine(msg))
	return err
}
