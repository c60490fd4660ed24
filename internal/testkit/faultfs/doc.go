// Package faultfs is test support for crash and fault-injection tests.
//
// It provides FS, an afero.Fs wrapper that forwards every operation to a
// base file system (usually afero.NewMemMapFs()) while modelling what would
// survive a power cut:
//
//   - File data becomes durable only when File.Sync succeeds on that file.
//     Each file is tracked as an inode that follows renames, so syncing a
//     temp file and renaming it keeps the synced content attached.
//   - A create, rename or remove becomes durable only when the containing
//     directory is fsynced (Open the directory and call Sync on the handle).
//     Directory creation, removal and renaming of directories themselves are
//     treated as durable immediately.
//   - Truncation is an ordinary unsynced change until the next Sync.
//
// FS.Crash builds a fresh file system holding only the durable state, with a
// CrashMode deciding what happens to data written after the last Sync
// (dropped, torn, zero-filled or fully kept). Faults can be injected with
// FailNextWrite, FailNextSync and SetHook, and fsyncs can be counted with
// SyncCount and DirSyncCount.
//
// The package knows nothing about the session log format; it only models a
// file system. Files it hands out deliberately have no Fd method, so code
// under test falls back to in-process locking.
package faultfs
