// Package handle is the session store contract and the code every store
// shares: Store and Handle (what a caller asks of any store), the one
// option set (Option, Config), the store core (Core, NewStore) over a
// StoreBackend, and the write core (NewHandle) over a Backend. The file
// store (handle/file, the embedded default) and the JetStream store
// (handle/jetstream) are each these two cores over their own engine. It
// is the layer between the byte format (package eventlog, which it uses)
// and everything that interprets events (checkpoints, projections,
// replay, which use it); it knows nothing about what events mean but the
// two reserved types (docs/format.md §7), and nothing of files or
// streams.
//
// # Use
//
// (From handle/file's ExampleNew.)
//
//	store := file.New(afero.NewOsFs(), dir)
//	h, err := store.Create(ctx, handle.WithLabels(map[string]string{"agent": "coder"}))
//	...
//	last, err := h.Append(ctx,
//		eventlog.Event{Type: "user/message", Time: time.Now().UnixMilli(), Data: json.RawMessage(`{"text":"hi"}`)},
//	...
//	if err := h.Flush(ctx); err != nil {
//	...
//	for e, err := range h.Read(ctx, 0, handle.End) {
//	...
//	r, err := store.Open(ctx, h.ID(), handle.ReadOnly)
//
// # Durability
//
// Append assigns seqs and queues events in memory; Flush is the barrier:
// when it returns nil every event appended before it survives a process
// kill or a power cut. The write core hands a flush's rows to the backend
// in one Write, and the next flush starts only after that Write returned
// (durable), so a crash can damage only the tail. Concurrent callers of
// Append+Flush share one write (group commit); there is no timer, so a
// lone appender never waits for others. A failed write poisons the
// handle: every later call returns a *PoisonedError, and reopening
// recovers from what the store holds.
//
// # Secrets
//
// A write handle redacts every event it is given before it checks,
// digests and stores it (package redact; off with WithoutRedaction,
// Unredacted, OpenUnredacted); CreateFrom, AppendAll and Rewrite store
// events as given. Sealed sessions (WithRecipients, SealedFor, SealedAs,
// WithIdentities; docs/format.md §11) are kept by the file store; the
// JetStream store refuses them with ErrSealed.
//
// # The store core and the write core
//
// The store core makes every decision a store makes (options, IDs,
// CreateFrom's checks, forks, Delete's dependents, Rewrite, the tree, GC);
// the backend only finds, reads, writes and removes logs, holds writers
// and keeps derived data (Catalog, Logs, Writers, Derived), and may keep
// an Index of its sessions. Open and Create return a backend that the
// core wraps, so a store made this way needs no code of its own for a
// handle's promises. A store embeds its Core and adds what its engine
// alone can do.
//
// # Concurrency
//
// Stores and handles are safe for concurrent use. One writer per session
// at a time, across processes (a lock, a lease: the backend's hold). Any
// number of read-only handles may read while a writer appends; they see
// only complete rows.
package handle
