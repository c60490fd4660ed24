// Package file is the embedded default store: sessions as files in one
// folder of an afero.Fs (docs/format.md §2), the store core and the write
// core of package handle over a file engine. <dir>/<ID>.jsonl (raw) or
// <dir>/<ID>.jsonl.zst (zstd) holds a session's log, <dir>/<ID>.lock its
// writer lock, <dir>/.cache its derived data and the session index.
// Besides handle.Store it converts, compacts, repairs and salvages logs,
// keeps sealed sessions (AddRecipients, RotateKey, Shred, ExportSealed)
// and reads log files by path (OpenPath, StatPath, CheckPath).
//
// # Durability
//
// Append assigns seqs and queues events in memory; Flush is the barrier:
// when it returns nil every event appended before it survives a process
// kill or a power cut. Bytes reach the file only in a flush (one write,
// then fsync), and the next flush starts only after that fsync returned, so
// a crash can damage only the tail. Concurrent callers of Append+Flush share
// one write and one fsync (group commit); there is no timer, so a lone
// appender never waits for others. A failed write or fsync poisons the
// handle: every later call returns a *PoisonedError, and reopening recovers
// from what is on disk. Creates and renames are followed by an fsync of the
// folder.
//
// Opening reports a torn tail (Handle.Torn) and a writer cuts it before its
// first append, but only a tail no writer acknowledged is torn: a writer's
// Close records the seq after its last acknowledged event in the session
// index (derived), and a tail that would drop a seq below it (or below the
// saved digest state's) is a *CorruptError instead.
//
// # Sealed sessions
//
// Every path that reads or writes a log file, derived data included,
// goes through the sealed layout (package seal), and AddRecipients,
// RotateKey, Shred and Rewrite change one (docs/format.md §11).
//
// # The session index
//
// The file store keeps a derived index of its sessions (docs/design.md,
// "The session index"): List by ID prefix (WithID), label queries, pages
// (Page), Children, Ancestors, Dependents and GC's old sessions cost what
// their answer costs, not a read of every log. A lost, damaged or
// outdated index is rebuilt from the logs; RebuildIndex forces it.
//
// # Concurrency
//
// Stores and handles are safe for concurrent use. One writer per session
// at a time, across processes: the writer lock is a POSIX record lock
// (fcntl) on the session's lock file when the file is an OS file, an
// in-process lock on any other file system. It belongs to the process, not
// to a descriptor: it dies with its process even when children of the
// process still hold the lock file open. Any number of
// read-only handles may read while a writer appends; they see only
// complete rows.
//
// # Files
//
// Only regular files are sessions: a link, FIFO, device or folder named
// like a session is refused with ErrNotRegular and never opened for
// reading, and no file of the store (lock, temp, derived, side file) is
// created or written through a link. Every read of a log stops with its
// context's error once the context is done.
//
// The package knows nothing of event semantics (checkpoints, turns,
// projections): those live in packages above it; nor of other stores.
package file
