// Package dsh converts DeepSeek Harness (dsh) session logs into sessionlog
// events, so tests can replay real recorded sessions (the third-party dsh
// traces that internal/tracestest locates; a fresh clone has none, and those
// tests skip) through the built-in projections.
// It is test support: converted copies are written to temporary stores at
// test time, never committed.
//
// # The source format
//
// A dsh log is JSONL. Its first row is a header
// {"type":"session","version":0,"id","createdAt",…}; every next row is an
// event {type, seq?, time?, data, surfaceOp?, sourceEventSeqs?, ignorable?}
// or a packed row of streamed deltas
//
//	{"type":"text-chunks","seq0":860,"time0":1786073831468,"data":{"turn":1,"step":6,"index":1,"dt":[0,18,…],"texts":["**","Turn",…]}}
//
// standing for len(texts) assistant/chunk events from seq0 on, the first at
// time0 and each next one dt[i] milliseconds after the one before
// (tool-call-chunks carry id, name and args instead of texts).
//
// # The mapping
//
// Parse keeps every event's type and data as they are. Seq and time are the
// source's where it gives them; otherwise seq is the next one and time the
// previous event's time + 1 (the header's createdAt for the first). Seqs
// must be contiguous from 0, as sessionlog's are. A row the log would
// refuse is an error (ErrFormat, naming the line): a type that is not a
// sessionlog type or is sessionlog's own (checkpoint, rollback), data
// nested too deeply, an event beyond eventlog.MaxRowSize once converted.
// A header value that is not a string becomes its label as JSON, invalid
// UTF-8 in it replaced by U+FFFD (a header holds valid UTF-8). Row keys
// sessionlog has no place for (surfaceOp, sourceEventSeqs, ignorable) are
// dropped and counted in the Report. A packed row becomes its
// assistant/chunk events, each with the data an unpacked dsh row of that
// delta has:
// {"turn","step","chunk":{"type":"text-delta"|"reasoning-delta","index","text"}}
// or {"turn","step","chunk":{"type":"tool-call-delta","index","id","name","argumentsDelta"}}.
//
// dsh uses the type names of the agent vocabulary (docs/format.md §8) with data of its
// own shapes (a user/message holds content parts, not text), so the built-in
// projections record those events as degraded: the faithful conversion
// tests that they do so without failing. With the Vocabulary option, Parse
// also rewrites the data of those types into the docs/format.md §8 shapes (see
// Vocabulary), which lets the transcript rebuild the real conversation.
package dsh
