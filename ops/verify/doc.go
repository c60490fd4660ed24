// Package verify checks sessions end to end and reports what it found,
// one Report a session or file, with one kind per failure (docs/cli.md,
// verify): corrupt, version, digest, lineage, io, or key (a sealed
// session no identity given opens: its framing alone is checked).
//
// A check reads every row of the log — the header, every row's shape and
// the seq rule (every frame's checksum for zstd) — then the logical log (a
// fork's parent must exist and hold the fork point) and every checkpoint:
// its log digest, and its state digest when it names a projection the
// check knows at that version (projection.Verifiable by default; others
// are counted as unchecked). A torn tail alone is ok.
//
//	rep := verify.Session(ctx, store, id)
//	fmt.Println(rep.OK, rep.Events, rep.Checkpoints)
//	...
//	for rep, err := range verify.Store(ctx, store) {
//
// checks a session of any store, then every session of the store; File
// checks a log file by path, in a store's folder or freely named.
//
// It works through handle's Store and FileStore and checkpoint.Verify; it
// knows no command line. Report's JSON is what logtool verify --json and
// serve's /api/verify print.
package verify
