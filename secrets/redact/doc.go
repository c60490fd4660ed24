// Package redact replaces secrets in event data before it is stored:
// docs/format.md, "Redaction". A Redactor scans every string of an
// event's data — object keys and values, decoded from their JSON escapes —
// with detectors of known secret shapes (Detectors: cloud keys, model
// provider keys, VCS and CI tokens, chat-app tokens, private key blocks,
// signed JWTs, passwords in URLs and connection strings), replaces each
// match with [REDACTED:<kind>], and records which strings it changed in
// the data's "$redacted" member (Fields reads it back).
//
// Only the raw bytes of each secret change: escapes around it are kept as
// written, and every other byte of the data stays as it was (data is
// stored as given, docs/format.md §4). Redacting twice changes nothing.
// Data in which nothing is found is returned as is, without an
// allocation: the common case costs a scan of its strings.
//
//	r := redact.New()
//	n := r.Events(batch) // before validation and digests
//
// The package knows eventlog's Event and nothing else: not files, stores
// or handles. A write path calls Events on each batch before it validates
// and digests it, so that what is stored, digested and replayed is the
// redacted form. A Redactor is safe for concurrent use.
package redact
