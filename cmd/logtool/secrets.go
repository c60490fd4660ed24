package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/scrub"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// The environment variables of sealed sessions (docs/cli.md).
const (
	envIdentity   = "SESSIONLOG_IDENTITY"   // an age identity file, as --identity
	envRecipients = "SESSIONLOG_RECIPIENTS" // age recipients, space separated, as --recipient
)

// secretFlags adds the global flags of secrets: --identity, --no-redact.
func (a *app) secretFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.StringArrayVar(&a.identityFiles, "identity", nil,
		"an age identity `FILE` (logtool keygen makes one) to read sealed sessions with (repeatable); $"+envIdentity+" names one")
	pf.BoolVar(&a.noRedact, "no-redact", false, "store events as given: no redaction of secrets at write (docs/format.md §11)")
}

// loadIdentities reads the identity files --identity (or
// $SESSIONLOG_IDENTITY) names, once.
func (a *app) loadIdentities() error {
	files := a.identityFiles
	if len(files) == 0 {
		if f := a.env(envIdentity); f != "" {
			files = []string{f}
		}
	}
	for _, f := range files {
		b, err := afero.ReadFile(a.fs, f)
		if err != nil {
			return usageErrorf("--identity %q: %v", f, err)
		}
		ids, err := age.ParseIdentities(strings.NewReader(string(b)))
		if err != nil {
			return usageErrorf("--identity %q: %v", f, err)
		}
		a.identities = append(a.identities, ids...)
	}
	return nil
}

// storeOptions are the options of every file store the run opens: the
// identities, and redaction unless --no-redact.
func (a *app) storeOptions() []handle.Option {
	opts := []handle.Option{handle.WithIdentities(a.identities...)}
	if a.noRedact {
		opts = append(opts, handle.Unredacted())
	}
	return opts
}

// fileStore returns the file store of folder dir.
func (a *app) fileStore(dir string) *file.Store {
	return file.New(a.fs, dir, a.storeOptions()...)
}

// recipients parses --recipient values (or $SESSIONLOG_RECIPIENTS when
// there are none): age1… public keys.
func (a *app) recipients(flags []string) ([]age.Recipient, error) {
	if len(flags) == 0 {
		flags = strings.Fields(a.env(envRecipients))
	}
	var out []age.Recipient
	for _, f := range flags {
		rs, err := age.ParseRecipients(strings.NewReader(f))
		if err != nil {
			return nil, usageErrorf("--recipient %q: %v (want an age1… public key)", f, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

func (a *app) newKeygenCmd() *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "keygen [--out FILE] [--json]",
		Short: "Make an age identity for sealed sessions and print its recipient",
		Long: `Keygen makes a new age X25519 identity: the secret key that reads sealed
sessions (--identity FILE) and its recipient, the public key that seals them
(new --recipient age1…). With --out FILE the identity is written to FILE (mode
0600; an existing FILE is refused) and {"identity","recipient"} printed;
without, the identity goes to stdout and the recipient to stderr, as
age-keygen does. Keep the identity secret: anyone who holds it reads every
session sealed for its recipient; lose it and they cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runKeygen(out, asJSON) },
	}
	cmd.Flags().StringVar(&out, "out", "", "write the identity to `FILE` instead of stdout")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// keygenResult is what `logtool keygen --out FILE` prints.
type keygenResult struct {
	Identity  string `json:"identity"`
	Recipient string `json:"recipient"`
}

func (a *app) runKeygen(out string, asJSON bool) error {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return err
	}
	text := fmt.Sprintf("# created by logtool keygen\n# public key: %s\n%s\n", id.Recipient(), id)
	if out == "" {
		if _, err := io.WriteString(a.stdout, text); err != nil {
			return err
		}
		_, err := fmt.Fprintf(a.stderr, "public key: %s\n", id.Recipient())
		return err
	}
	if _, err := a.fs.Stat(out); err == nil {
		return usageErrorf("--out %q exists; remove it first or choose another name", out)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--out %q: %w", out, err)
	}
	f, err := a.fs.OpenFile(out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("--out %q: %w", out, err)
	}
	_, err = io.WriteString(f, text)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--out %q: %w", out, err)
	}
	res := keygenResult{Identity: out, Recipient: id.Recipient().String()}
	return a.printResult(asJSON, res, func() string {
		return fmt.Sprintf("identity written to %s; its recipient (seals sessions for it): %s", out, res.Recipient)
	})
}

func (a *app) newShredCmd() *cobra.Command {
	var withChildren, asJSON bool
	cmd := &cobra.Command{
		Use:   "shred [--with-children] [--json] SESSION",
		Short: "Destroy a sealed session's keys: its content can no longer be read",
		Long: `Shred destroys every key record of a sealed SESSION, so that no identity
reads its content again: the file is rewritten (temp file, fsync, rename) with
each key record replaced by one of the same length that holds nothing of the
key, then the old file's key records are overwritten where they stood; its
derived data, repair side files and temp files go. The session stays, its ID,
createdAt and parent in clear. A session that forks depend on is refused
unless --with-children, which shreds its forks and children too. What shredding
cannot reach — copies made before (backups, exports), blocks a file system
keeps — is in docs/format.md §11. Prints {"shredded":[ids],"envelopes":N}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runShred(cmd.Context(), args[0], withChildren, asJSON)
		},
	}
	cmd.Flags().BoolVar(&withChildren, "with-children", false, "shred the session's forks and children too")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func (a *app) runShred(ctx context.Context, arg string, withChildren, asJSON bool) error {
	st, id, err := a.storeSession(ctx, arg, "shred")
	if err != nil {
		return err
	}
	sh, ok := st.(handle.Shredder)
	if !ok {
		return usageErrorf("shred works on a store that can destroy a session's key records (a folder store), not on %s (docs/distributed.md)", a.location())
	}
	rep, err := sh.Shred(ctx, id, withChildren)
	if err != nil {
		return err
	}
	return a.printResult(asJSON, rep, func() string {
		return fmt.Sprintf("shredded %s: %d key record(s) destroyed; the content can no longer be read", strings.Join(rep.Shredded, ", "), rep.Envelopes)
	})
}

func (a *app) newRedactCmd() *cobra.Command {
	var patterns []string
	var withChildren, asJSON bool
	cmd := &cobra.Command{
		Use:   "redact [--pattern RE]... [--with-children] [--json] SESSION",
		Short: "Redact the secrets of a stored session, recording what changed",
		Long: `Redact rewrites SESSION (temp file, fsync, rename, under its writer lock) with
every event's data redacted by the built-in detectors and the --pattern regular
expressions (their matches become [REDACTED:pattern]), recomputes its
checkpoints' digests, and appends a redact/rewrite event: the digest and length
of the log before and the seqs and kinds redacted, so that a holder of the old
file can check that nothing else changed (docs/format.md §11). A session forks
depend on is refused unless --with-children, which redacts its forks and
children too. Prints one {"id","seq","record"} a session.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRedact(cmd.Context(), args[0], patterns, withChildren, asJSON)
		},
	}
	cmd.Flags().StringArrayVar(&patterns, "pattern", nil, "a regular expression `RE` (RE2) whose matches are redacted too (repeatable)")
	cmd.Flags().BoolVar(&withChildren, "with-children", false, "redact the session's forks and children too")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func (a *app) runRedact(ctx context.Context, arg string, patterns []string, withChildren, asJSON bool) error {
	var opts []scrub.Option
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return usageErrorf("--pattern %q: %v", p, err)
		}
		opts = append(opts, scrub.WithPattern("pattern", re))
	}
	if withChildren {
		opts = append(opts, scrub.WithDescendants())
	}
	st, id, err := a.storeSession(ctx, arg, "redact")
	if err != nil {
		return err
	}
	res, err := scrub.Session(ctx, st, id, opts...)
	for _, r := range res {
		if perr := a.printResult(asJSON, r, func() string {
			return fmt.Sprintf("redacted %s: %d event(s) changed; the record of it is seq %d", r.ID, len(r.Record.Redacted), r.Seq)
		}); perr != nil {
			return perr
		}
	}
	return err
}

// storeSession resolves SESSION to a session of a store, for the
// commands that rewrite a session (shred, redact). A session no identity
// opens is one too: shred needs no key of it (its framing says where the
// key records are).
func (a *app) storeSession(ctx context.Context, arg, cmd string) (handle.Store, string, error) {
	s, err := a.resolve(arg)
	if err != nil && !(errors.Is(err, seal.ErrNoKey) && s.id != "") {
		return nil, "", err
	}
	if s.id == "" {
		return nil, "", usageErrorf("%s works on a session of a store, not on a freely named file (%s)", cmd, s.path)
	}
	if s.st == nil {
		st, err := a.sessions(ctx)
		if err != nil {
			return nil, "", err
		}
		return st, s.id, nil
	}
	return s.st, s.id, nil
}

// sealedSession returns the store and ID of the sealed session arg
// names, when its store can export it sealed (handle.SealedExporter), and
// false for any other (clear, a freely named file, another store's).
func (a *app) sealedSession(ctx context.Context, arg string) (handle.SealedExporter, string, bool) {
	s, err := a.resolve(arg)
	if err != nil || s.id == "" {
		return nil, "", false
	}
	ex, ok := s.st.(handle.SealedExporter)
	if !ok {
		return nil, "", false
	}
	info, err := s.st.Stat(ctx, s.id)
	if err != nil || !info.Sealed {
		return nil, "", false
	}
	return ex, s.id, true
}

// brokenErr is the error of a listing that could not describe the
// sessions broken: a failed check (exit 1), or, when what every one of
// them lacks is a key, the environment's (exit 2: the identity).
func brokenErr(broken []error, msg string) error {
	for _, err := range broken {
		if !errors.Is(err, seal.ErrNoKey) {
			return failedf("%s", msg)
		}
	}
	return usageErrorf("%s: they are sealed, and no identity given opens them (--identity FILE or $%s)", msg, envIdentity)
}
