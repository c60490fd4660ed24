// Package jetstream is a handle.Store on NATS JetStream: the same contract
// as the file store (the handle/storetest suite passes unchanged), the same
// logical logs and digests, for agent fleets where one machine is not
// enough.
//
// # Layout
//
// A store is one stream (named after the store's prefix, subjects
// <prefix>.s.*), the KV bucket <prefix>_index (the session index, derived
// and rebuilt when lost: index.go, its order by last activity ixorder.go)
// and, unless leases are off, the KV bucket <prefix>_leases. A store
// opened WithReadOnly writes none of them: without an index whole it
// reads the stream. Session <ID> is the subject <prefix>.s.<ID>: its
// first message holds the header row, each later message a run of rows,
// so the concatenation of the subject's payloads is byte for byte the raw
// log a file would hold (docs/format.md). Data messages carry Sl-Off (the
// byte offset of their payload in that concatenation) and Sl-Seq (the seq
// of their first row), which let Stat and Read start near the end or near
// a seq without reading the log.
//
// A sealed session (docs/format.md §11; WithRecipients, WithIdentities,
// handle.WithRecipients on the create) keeps the raw sealed layout the same way: the first
// message holds the clear header, the key records and the sealed header
// row, each later one whole records, one a row, Sl-Seq naming the seq a
// record's row holds (sealed.go). Sealing is package sealing's, the file
// store's too; every read unseals through seal.Reader, so rows are
// checked and digested as in a clear log. AddRecipients, RotateKey and
// Shred change the key records (keys.go).
//
// # Durability and concurrency
//
// Flush publishes what was appended since the last flush and returns once
// JetStream acknowledged it: one flush is one atomic batch (split into
// several, each atomic, when it is larger than the server's limits), whose
// first message expects the subject's last stream seq, so that two writers
// on two machines can never both append at one seq. What an
// acknowledgement is worth depends on the stream and the server (see
// docs/distributed.md): New refuses streams that cannot keep acknowledged
// writes and warns, through the injected logger, about those that keep
// them only on a server synced on every write.
//
// A write handle holds a lease on its session (a KV entry, renewed while
// the handle is open, taken over only once it expired by the store's
// clock): a second writer gets handle.ErrLocked. Stores and handles are
// safe for concurrent use; Append and Flush callers of one handle share
// publishes (group commit).
//
// Its Store methods are handle's store core (core.NewStore) over an
// engine that reads, publishes and purges subjects and holds leases
// (engine.go): options, IDs, forks, Delete's dependents, the tree and GC
// decide as on files, the same code. Its handles are handle's write core
// (core.NewHandle) over a backend that publishes and fetches the
// subject's messages (handle.go): group commit, flush policies
// (WithFlushPolicy), poisoning and digests are the file store's too.
//
// # Clusters
//
// A store URL (ParseURL, OpenURL) names several seeds and the replicas.
// Bulk reads are served by any replica, but how far a read must go is
// asked of the stream's leader, so that no read misses an acknowledged
// flush (fetch.go). A publish whose outcome is unknown is retried with the
// same expected seq and settled by what follows on the leader, so that it
// is stored once and never reported lost (publish.go). Failures that end
// on their own are retried for a window; what outlasts it wraps
// handle.ErrUnavailable (retry.go). A try in flight when the connection
// leaves its server, or when the stream or a bucket (leases, index)
// elects a new leader, ends at once and is retried (conn.go); OpenURL's
// connection leaves a server that stopped answering within a second.
//
// The package knows the handle contract, the row format of package
// eventlog and the sealed layout of package seal, nothing of what events
// mean, and nothing of the file store.
package jetstream
