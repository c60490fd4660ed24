// Package zstdframe is the zstd frame layer of a sessionlog log file
// (docs/format.md §5): walking frame headers without decompressing, the
// tail frame a writer appends when it closes, the frame limits, and where
// a writer cuts its rows into frames. It works on bytes and io.ReaderAt.
//
// It knows nothing of rows, events or headers: package eventlog, which
// decodes frames into rows, and the stores, which write frames, both build
// on it. Everything in it is safe for concurrent use.
package zstdframe
