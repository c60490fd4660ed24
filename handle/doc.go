// Package handle stores sessions and gives out handles to them: files,
// locking, durability. It is the layer between the byte format (package
// eventlog, which it uses) and everything that interprets events
// (checkpoints, projections, replay, which use it); it knows nothing about
// what events mean.
//
// # Use
//
//	store := handle.NewFileStore(afero.NewOsFs(), "sessions")
//	h, err := store.Create(ctx, handle.WithLabels(map[string]string{"agent": "coder"}))
//	...
//	last, err := h.Append(ctx, eventlog.Event{Type: "user/message", Time: now, Data: data})
//	err = h.Flush(ctx) // durable from here on
//	for e, err := range h.Read(ctx, 0, handle.End) { ... }
//	err = h.Close()
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
// projections): those live in packages above it.
package handle
