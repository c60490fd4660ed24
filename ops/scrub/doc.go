// Package scrub redacts a stored session (docs/format.md §11,
// "Redacting a stored log"): it rewrites the session's log with every
// event redacted by the detectors of package redact (and extra
// patterns), recomputes its checkpoints' digests, and appends a
// redact/rewrite event that records what it changed — the seqs and kinds
// redacted, the digest and length of the log before — so that whoever
// holds the old file can check that nothing else changed (Check).
//
//	res, err := scrub.Session(ctx, store, id, scrub.WithPattern("acme", re))
//	fmt.Println(err, res[0].Record.Redacted)
//	...
//	err = scrub.Check(ctx, oldLog, newLog) // nil: only redactions
//
// The rewrite is one atomic whole-file rewrite of the file store
// (file.Store.Rewrite: a temp file and a rename, under the
// session's writer lock), sealed as the log was. A fork inherits its
// parent's events, so the digests of its checkpoints change with its
// parent's: a session that forks depend on is refused unless
// WithDescendants, which redacts its forks and children too, parents
// first.
//
// It stands above handle (the store), redact (the detectors), replay and
// projection (state digests); it knows no command line.
package scrub
