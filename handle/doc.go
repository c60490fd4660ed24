// Package handle is the session store contract: Store and Handle (what a
// caller asks of any store), the one option set (Option, Config), the
// errors, and the capability interfaces of what only some stores can do
// (Converter, Repairer, Salvager, Shredder, Rekeyer, SealedExporter). A
// store is built on handle/core (its store core and write core over the
// store's engine), as database/sql drivers are on database/sql/driver: the
// file store (handle/file, the embedded default) and the JetStream store
// (handle/jetstream). It sits between the byte format (package eventlog)
// and everything that interprets events (checkpoints, projections,
// replay); it knows nothing about what events mean but the two reserved
// types (docs/format.md §7), and nothing of files or streams.
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
// digests and stores it (package redact; off with Unredacted, for a store
// or one handle); CreateFrom, AppendAll and Rewrite store events as given.
// Sealed sessions (WithRecipients, Config.SealAs, WithIdentities; docs/format.md
// §11) are kept by both stores, sealed by one layer
// (handle/internal/sealing).
//
// # Concurrency
//
// Stores and handles are safe for concurrent use. One writer per session
// at a time, across processes (a lock, a lease: the backend's hold). Any
// number of read-only handles may read while a writer appends; they see
// only complete rows.
package handle
