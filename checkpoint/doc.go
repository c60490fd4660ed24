// Package checkpoint writes and reads the two reserved events of docs/format.md §7:
// checkpoints, marker events that prove what came before them with a log
// digest (and optionally name a projection's state digest), and rollbacks,
// events that make every projection return to an earlier state without
// deleting anything.
//
// (From ExampleRollbackTo.)
//
//	info, err := checkpoint.Create(ctx, h, checkpoint.WithLabel("before-refactor"))
//	...
//	seq, err := checkpoint.RollbackTo(ctx, h, "before-refactor")
//
// The log digest comes from the write handle, which keeps it current as it
// appends (handle.Handle.LogDigest): creating a checkpoint never re-reads
// the log. Verify recomputes every digest from the log with the same code
// (eventlog.Digest) through package replay.
//
// The package knows handles only through the small interfaces it needs
// (Writer, Reader); it knows nothing of files.
package checkpoint
