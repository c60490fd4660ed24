// Package inspect reads sessions for people and scripts: the checked read
// of logtool cat (every checkpoint digest it passes checked, the events
// before the damage of a damaged log), a salvage read past damage, stat's
// description and stop facts, diff's first difference, the state replay
// shows (State: a session its writer left mid-turn closed in memory), the seqs of a turn counted
// from the start or the end (show --turn), and the forest of a store's
// sessions (ls --tree: Forest), and the list ls shows (List: the last
// active first). StatReport and TreeReport are what stat, ls and ls --tree
// print as JSON (docs/cli.md): logtool and serve's /api/ both print them,
// and are flags and output over this package.
//
// A Log names what is read — a session of any store (InStore), or a log
// file by path, freely named or not (File) — and reads it through the
// store contract alone. Only the salvage reads need the session to be a
// file (handle.Salvager, a capability): on another store
// Salvage is refused with ErrNotFiles, and a damaged log's read shows no
// events before its damage.
//
// It knows no command line, no output format and no store's type.
package inspect
