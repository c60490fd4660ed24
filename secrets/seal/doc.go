// Package seal reads and writes sealed session logs: docs/format.md,
// "Sealed sessions". A sealed log is a clear log's plaintext — the header
// row, then its rows (raw) or zstd frames (zstd) — with every row or
// frame sealed with AES-256-GCM under a random per-session data key, and
// that key wrapped for age recipients (X25519 keys, passphrases) in key
// records of the same file. What a store needs without a key stays clear
// (the ID, createdAt, the parent); labels are in the sealed header row.
//
// Layout (raw; each record one line):
//
//	{"format":"sessionlog-sealed","version":1,"id":"01J…","createdAt":1764450000000}
//	{"key":0,"age":"YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSB…"}
//	{"k":0,"s":"<base64: nonce, ciphertext of the header row, tag>"}
//	{"k":0,"s":"<base64: nonce, ciphertext of row 1, tag>"}
//
// The zstd layout holds the same records as skippable frames (magics
// 0x184D2A5B clear header, 0x184D2A5C key record, 0x184D2A5D sealed
// frame), so that it is a valid zstd file that decompresses to nothing.
//
// Writing: NewKey, Wrap (age files for the recipients), AppendClearHeader,
// AppendKeyRecord, then a Sealer's AppendRows or AppendFrame for the
// plaintext, header row first. Reading: a Keyring of identities and a
// Reader, which hands the plaintext to an eventlog.Reader, so every row
// is checked as in a clear log and digests are over the same canonical
// bytes. Check reads the framing without a key.
//
// The package knows eventlog (rows, frames, errors) and age; it knows no
// files, stores or handles: it works on byte slices and io.Reader. A
// Sealer and a Reader belong to one goroutine; a Keyring is safe for
// concurrent use.
package seal
