// Package logfile is the plumbing the stores share over package eventlog
// for logs kept as bytes (a file, a sealed file, a stream's messages):
// bounded reads of a log's two ends (ReadHeader, LastEvent, ReadTail,
// ReadZstdTail), seeking to a row or a frame without reading from the
// start (RowAfter, FrameBefore), salvage past damage (Salvage,
// SalvageWith), and the pieces a writer builds before a row's seq is known
// (NewHeader, AppendCanonTail).
//
// It is module-internal: a reader of the format needs eventlog alone. It
// knows nothing of stores, locks or durability; it works on io.ReaderAt,
// byte slices and what eventlog decodes, and on zstd frames through
// internal/format/zstdframe. Everything in it is safe for concurrent use.
package logfile
