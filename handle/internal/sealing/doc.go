// Package sealing is the sealing layer of the stores (docs/format.md §11,
// "Sealed sessions"), written once for the file store and the JetStream
// store: it acts on a session's header, rows and key records, not on
// files or messages. It decides whom a new session is sealed for
// (Recipients), plans its first bytes — the clear header, the key
// records, the sealed header row — (Plan), seals a write's rows one
// record a row and says where each record starts and which seq it holds
// (SealRows), and keeps the keyrings a store opened, per session (Keys).
// Reading is seal.Reader's: every row is checked as in a clear log.
//
// It knows package seal and the row format (eventlog), nothing of files,
// streams or handles. Keys is safe for concurrent use; a Plan belongs to
// one writer.
package sealing
