// Package importers holds what the converters of foreign agent traces into
// sessionlog sessions share: the converted Session, an event Builder that
// writes the docs/format.md §8 vocabulary, and the walk that turns a FILE or DIR
// argument of `logtool import --from FORMAT` into units of files to import
// together. The formats themselves live in the sub-packages (claude, dsh,
// swe); cmd/logtool/import.go names them.
//
// A converter reads the whole trace and returns every event in memory, seqs
// from 0, each one the log takes as it is: a trace whose converted event
// the log would refuse (a row too large, data nested too deeply) is an
// ErrFormat error. It is deterministic: the same bytes give the same
// events, labels and createdAt (the store gives each imported session a
// new ID).
package importers
