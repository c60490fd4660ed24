// Package dsh imports DeepSeek Harness (dsh) session logs. It has two
// layers: ParseLog reads the format faithfully (it expands packed chunk
// rows and, with its Vocabulary option, rewrites the data of the types dsh
// shares with docs/format.md §8 into §8's shapes), and Parse (the Importer) builds
// the imported session on it. It knows the importer package and eventlog,
// nothing of stores.
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
// # The faithful reading (ParseLog)
//
// ParseLog keeps every event's type and data as they are. Seq and time are the
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
// tests that they do so without failing. With the Vocabulary option, ParseLog
// also rewrites the data of those types into the docs/format.md §8 shapes (see
// Vocabulary), which lets the transcript rebuild the real conversation.
//
// # The mapping of the import (Convert)
//
// The header row is kept as dsh/session. Every dsh event of a type of the
// vocabulary becomes one event of the same type, with the data Vocabulary
// gives it (packed chunk rows are expanded into assistant/chunk events),
// but for who typed a message: dsh records it as data.source.kind, and
// only "user" is the person — any other kind (a plugin's runtime context
// or skill catalog, a goal round, another agent's report…) is context a
// producer injected, context/message of that kind, and a compaction
// checkpoint (plugin "compact") is context/compacted. A slash command the
// person typed (command/run) is their user/message "/<name><args>". dsh's
// own types (request/header, command/done, goal/change, approval/*,
// tool-workflow/* …) become dsh/<type> events whose data is the row. Around each assistant/message the import
// adds what the vocabulary rewrite leaves out:
//
//   - before it, assistant/reasoning {"text","source"} for each reasoning
//     part of the message, so the transcript attaches it to the message;
//   - after it, usage {"inputTokens","outputTokens","cachedTokens"?,
//     "model"?} when the message's usage has both token counts, none
//     negative and their sum within int64: dsh counts
//     cache reads (cacheReadTokens) and writes apart from inputTokens, §8
//     counts them in it, cachedTokens being the reads; the model is the
//     message's (dsh's usage object is in the row).
//
// Convert streams (row by row, one row held) and keeps dsh's own turn
// events; a log that ends mid-turn is closed as `logtool resume` would
// (synthetic results, step/end, turn/end interrupted). Its identity
// (Session.ID) is the ULID derived from its header.
//
// Lossless: the first vocabulary event made from a row carries the row as
// "source":{"line","record"}, the row's other events "source":{"line"}
// (but a packed row's later assistant/chunk deltas, which keep their data
// alone)
// (data that can hold no "source" — not an object, or one with a
// "source" of its own — is kept as it is, the row beside it as
// dsh/record). Seqs are renumbered from 0 (the added events take seqs); times are dsh's (an event without one gets the previous
// time + 1, the header's createdAt for the first). createdAt is the
// header's. Labels: source "dsh", sourceFile, sourceId (the header's id),
// cwd, model (the first request/header's, else the first message's),
// title (the first session/title), and the header's other keys as
// dsh.<key>.
package dsh
