package inspect

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/replay"
)

// ErrNotFiles: a salvage read of a log that is not a file (a session of a
// store whose sessions are not files, such as JetStream).
var ErrNotFiles = errors.New("inspect: the session's log is not a file")

// A Log is the log of one session as an inspection reaches it: a session
// of a store by ID, or a log file by path. The zero Log is not usable.
type Log struct {
	st    handle.Store // the store holding the session; nil for a freely named file
	id    string       // "" for a freely named file
	files *file.Store  // the file store of the log's folder, when the log was named by path
	path  string       // the log file's path, when named by path
	salv  handle.Salvager
}

// InStore is session id of st.
func InStore(st handle.Store, id string) Log {
	salv, _ := st.(handle.Salvager)
	return Log{st: st, id: id, salv: salv}
}

// File is the log file at path, read through files, the file store of its
// folder: the session of that store the name says when it is
// <ID>.jsonl[.zst], else a freely named file (an export, say), which has
// no store (no derived data, no writer) and is read on its own.
func File(files *file.Store, path string) Log {
	if id, _, ok := file.ParseFileName(filepath.Base(path)); ok {
		return Log{st: files, id: id, files: files, path: path, salv: files}
	}
	return Log{files: files, path: path, salv: files}
}

// Store returns the store holding the session, nil for a freely named
// file; ID its ID in that store ("" for a freely named file).
func (l Log) Store() handle.Store { return l.st }

// ID returns the session's ID in its store, "" for a freely named file.
func (l Log) ID() string { return l.id }

// IsFile reports whether the log can be read past damage (its store is a
// handle.Salvager: its logs are files), which the salvage reads need.
func (l Log) IsFile() bool { return l.salv != nil }

// Open opens the log for reading: a read-only handle, which checks the
// whole log first (handle.Store.Open).
func (l Log) Open(ctx context.Context) (handle.Handle, error) {
	if l.st != nil {
		return l.st.Open(ctx, l.id, handle.ReadOnly)
	}
	return l.files.OpenPath(ctx, l.path)
}

// OpenTail opens a Tail on the log (handle.Store.OpenTail), which does
// not check the rest of it where the store can avoid it.
func (l Log) OpenTail(ctx context.Context) (handle.Tail, error) {
	if l.st != nil {
		return l.st.OpenTail(ctx, l.id)
	}
	t, err := l.files.OpenTailPath(ctx, l.path)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Stat describes the session without reading its log.
func (l Log) Stat(ctx context.Context) (handle.Info, error) {
	if l.st != nil {
		return l.st.Stat(ctx, l.id)
	}
	return l.files.StatPath(ctx, l.path)
}

// cache is where replay finds and keeps derived states: the store, none
// for a freely named file.
func (l Log) cache() replay.Cache {
	if l.st == nil {
		return nil
	}
	return l.st
}

// writerHeld reports whether a writer holds the session now (never, for
// a freely named file: no writer writes it by its name).
func (l Log) writerHeld(ctx context.Context) (bool, error) {
	if l.st == nil {
		return false, nil
	}
	return l.st.WriterHeld(ctx, l.id)
}

// Salvage reads the log file past damage, for inspection (see
// handle.Salvager): every event it can decode goes to fn, a
// fork's inherited events first, and the result lists each damaged range
// with the seqs lost. It changes nothing. A log that is not a file is
// refused with ErrNotFiles.
func (l Log) Salvage(ctx context.Context, fn func(eventlog.Event) error) (eventlog.SalvageResult, error) {
	if l.salv == nil {
		return eventlog.SalvageResult{}, fmt.Errorf("%w: session %s (a salvage reads log files; docs/distributed.md)", ErrNotFiles, l.id)
	}
	var ferr error
	yield := func(e eventlog.Event) bool {
		ferr = fn(e)
		return ferr == nil
	}
	var res eventlog.SalvageResult
	var err error
	if l.files != nil {
		res, err = l.files.SalvagePath(ctx, l.path, yield)
	} else {
		res, err = l.salv.Salvage(ctx, l.id, yield)
	}
	if err == nil {
		err = ferr
	}
	return res, err
}
