package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// Sessionlog is the name of sessionlog's own format, beside the foreign
// formats of the importer registry.
const Sessionlog = "sessionlog"

// Status says what an import did with one source.
type Status string

// The statuses of a Result.
const (
	Created   Status = "created"   // a new session holds the source
	Appended  Status = "appended"  // the source grew: its new events were appended to its session
	Unchanged Status = "unchanged" // its session holds the source already: nothing written
	Failed    Status = "failed"    // nothing written for it: Reason says why
)

// Labels an import writes beside the format's own.
const (
	LabelImportKey    = "importKey"    // the source's identity: <format>:<its own session id>
	LabelSourceDigest = "sourceDigest" // sha256 of the source bytes first imported
	LabelPartial      = "partial"      // the line a damaged source was cut before
)

// Result is what an import did with one session's source.
type Result struct {
	// Source is the file; Format the format it was read as ("" when
	// none was found). Arg is the path argument that named it or that it
	// was found under (for a sub-session, its parent file's folder), so
	// that Source relative to Arg tells apart files of the same name.
	Source, Format string
	Arg            string
	Status         Status
	// Reason says why a source failed (Err is the error), and for one
	// that did not, what was cut from it ("" when nothing was).
	Reason string
	Err    error
	// ID and Path name the session (not for a failure); Events is how
	// many events it holds after the import, StoredBytes what it takes in
	// the store (handle.Info.SizeBytes) and Encoding its encoding.
	ID, Path    string
	Events      int64
	StoredBytes int64
	Encoding    string
	// SourceBytes is the size of the source file (of any format).
	SourceBytes int64
	// Of a foreign trace: its records, those the session keeps, and its
	// damage (see importer.Session).
	Records, Kept int
	Partial       *importer.RecordError
	Skipped       []*importer.RecordError
	Torn          *importer.Torn
}

// Summary is what an Import did, source by source, and the count of each
// status.
type Summary struct {
	Results                              []Result
	Created, Appended, Unchanged, Failed int
}

func (s *Summary) add(r Result) {
	s.Results = append(s.Results, r)
	switch r.Status {
	case Created:
		s.Created++
	case Appended:
		s.Appended++
	case Unchanged:
		s.Unchanged++
	default:
		s.Failed++
	}
}

// Progress is where an Import is, as told to WithProgress: files and
// bytes done of all, and the sessions so far by status.
type Progress struct {
	Files, FilesDone int
	Bytes, BytesDone int64
	Summary          *Summary
	// Current is the file being imported, "" once all are done.
	Current string
}

// ErrUsage is wrapped by the error about what Import was asked as a
// whole: an unknown format or encoding. Nothing was imported. (A path
// that gives nothing to import — there is none, it is no file or folder,
// it holds no file of the format — is a Failed result of its own.)
var ErrUsage = errors.New("ingest: nothing to import")

// Option configures Import.
type Option func(*config)

type config struct {
	from     string
	encoding string
	fs       afero.Fs
	reg      *importer.Registry
	progress func(Progress)
	log      *slog.Logger
	conv     []importer.Option
	red      *redact.Redactor // nil: foreign events are stored as converted
	srcOpts  []handle.Option  // of the file store a sessionlog log is read through
}

// From reads every file as the format name (Sessionlog, or a name of the
// registry) instead of finding each file's format by its content.
func From(name string) Option { return func(c *config) { c.from = name } }

// WithEncoding creates every new session in encoding (handle.EncodingRaw
// or handle.EncodingZstd). Without it a sessionlog file's session keeps
// the file's encoding and a foreign trace's takes the store's default.
func WithEncoding(encoding string) Option { return func(c *config) { c.encoding = encoding } }

// SkipBad makes a JSONL trace's import go past its bad lines, each
// reported, instead of stopping before the first (importer.SkipBad).
func SkipBad() Option { return func(c *config) { c.conv = append(c.conv, importer.SkipBad()) } }

// WithFs reads the sources from fsys (default: the OS file system).
func WithFs(fsys afero.Fs) Option { return func(c *config) { c.fs = fsys } }

// WithRegistry sets the foreign formats (default: formats.Registry()).
func WithRegistry(r *importer.Registry) Option { return func(c *config) { c.reg = r } }

// WithProgress makes Import call fn when a file starts and when it is
// done, from Import's goroutine.
func WithProgress(fn func(Progress)) Option { return func(c *config) { c.progress = fn } }

// WithLogger sets the logger (default: silent).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithRedactor sets the redactor applied to the events of a foreign
// trace before they are stored (docs/format.md §11): by default
// redact.New(), the built-in detectors; nil stores them as converted
// (handle.Unredacted). A re-import compares the session with the trace
// both redacted, so that a session imported with other detectors, or
// none, is still recognised as the trace's. A sessionlog log is copied as
// it is (its checkpoints' digests are over its bytes): run a redaction of
// the stored log for that (redact.Log).
func WithRedactor(r *redact.Redactor) Option { return func(c *config) { c.red = r } }

// handle.Unredacted stores the events of foreign traces as converted.
func WithoutRedaction() Option { return WithRedactor(nil) }

// WithSourceOptions sets the options of the file store a sessionlog log
// to import is read through (handle.WithIdentities: a sealed export is
// read with them, and imported sealed as it is).
func WithSourceOptions(opts ...handle.Option) Option {
	return func(c *config) { c.srcOpts = opts }
}

// WithConvert passes options to every conversion (importer.MaxLine…).
func WithConvert(opts ...importer.Option) Option {
	return func(c *config) { c.conv = append(c.conv, opts...) }
}

// Import imports the files and folders of paths into st (see the package
// doc) and reports each session's source. Its error is about what it was
// asked (ErrUsage: nothing was imported) or the context's; a path or a
// source that cannot be imported is a Failed result, and the others are
// imported.
func Import(ctx context.Context, st handle.Store, paths []string, opts ...Option) (Summary, error) {
	cfg := config{fs: afero.NewOsFs(), log: slog.New(slog.DiscardHandler), red: redact.New()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.reg == nil {
		cfg.reg = formats.Registry()
	}
	if cfg.from != "" && cfg.from != Sessionlog {
		if _, err := cfg.reg.Lookup(cfg.from); err != nil {
			return Summary{}, fmt.Errorf("%w: %w", ErrUsage, err)
		}
	}
	switch cfg.encoding {
	case "", handle.EncodingRaw, handle.EncodingZstd:
	default:
		return Summary{}, fmt.Errorf("%w: encoding %q: want %s or %s", ErrUsage, cfg.encoding, handle.EncodingRaw, handle.EncodingZstd)
	}
	plan, err := planOf(ctx, &cfg, paths)
	if err != nil {
		return Summary{}, err
	}
	run := &run{cfg: &cfg, st: st, keys: map[string]eventlog.Parent{}}
	run.progress.Files, run.progress.Bytes, run.progress.Summary = plan.files, plan.bytes, &run.sum
	for _, u := range plan.units {
		if err := ctx.Err(); err != nil {
			return run.sum, err
		}
		if err := run.unit(ctx, u); err != nil {
			return run.sum, err
		}
	}
	run.progress.Current = ""
	run.tell()
	return run.sum, nil
}

// run is one Import: its results so far, and what a later session may
// link to.
type run struct {
	cfg      *config
	st       handle.Store
	sum      Summary
	progress Progress
	// keys maps a session's importer.Session.Key to its session and last
	// seq, for the forks (Codex's forked_from_id) of a later source.
	keys map[string]eventlog.Parent
}

func (r *run) tell() {
	if r.cfg.progress != nil {
		r.cfg.progress(r.progress)
	}
}

// unit imports the files of one unit: a file, then its sub-sessions,
// each linked to the session that spawned it.
func (r *run) unit(ctx context.Context, u unit) error {
	if u.err != nil {
		r.start(u.files[0])
		r.done(u.files[0], failed(u.files[0].path, u.format, u.err))
		return nil
	}
	if u.format == Sessionlog {
		r.start(u.files[0])
		r.done(u.files[0], r.native(ctx, u.files[0]))
		return ctx.Err()
	}
	imp, _ := r.cfg.reg.Lookup(u.format) // planOf plans known formats only
	var sessions []made
	for _, f := range u.files {
		r.start(f)
		res, m := r.foreign(ctx, imp, f, sessions)
		sessions = append(sessions, m)
		r.done(f, res)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) start(f source) {
	r.progress.Current = f.path
	r.tell()
}

func (r *run) done(f source, res Result) {
	res.Arg = f.arg
	r.sum.add(res)
	r.progress.FilesDone++
	r.progress.BytesDone += f.size
	r.tell()
}

// stored sets what res's session takes in the store, from info.
func (res *Result) stored(info handle.Info) {
	res.ID, res.Path, res.Events, res.StoredBytes, res.Encoding = info.ID, info.Path, info.Events, info.SizeBytes, info.Encoding
}

// failed is the Result of a source nothing was written for.
func failed(source, format string, err error) Result {
	return Result{Source: source, Format: format, Status: Failed, Reason: err.Error(), Err: err}
}
