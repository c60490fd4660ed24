// Package core is what a session store is built from: the store core
// (Store, NewStore) over a StoreBackend, and the write core (NewHandle)
// over a Backend, so that every store keeps the handle contract with the
// same code (docs/design.md, "The write core").
//
// The store core makes every decision a store makes — options, IDs,
// CreateFrom's checks, forks, Delete's dependents, Rewrite, the tree, GC,
// List — and asks its backend only to find, read, write and remove logs
// (Catalog, Logs), hold writers (Writers) and keep derived data
// (Derived), with an optional Index of its sessions. Open and Create
// return the session's Backend, which the core wraps: the write core
// keeps seqs, the queue and group commit, flush policies, poisoning,
// Close, the running digest, the reserved-event checks and lineage reads.
// A store embeds its *Store and adds what its engine alone can do, as the
// capability interfaces of package handle.
//
// The package knows the handle contract and the row format (eventlog);
// nothing of files, streams or what events mean.
package core
