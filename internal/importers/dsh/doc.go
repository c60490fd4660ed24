// Package dsh imports DeepSeek Harness (dsh) session logs: it builds on the
// converter of internal/dsh (dshlog here), which reads the format, expands
// packed chunk rows and, with its Vocabulary option, rewrites the data of
// the types dsh shares with docs/format.md §8 into §8's shapes (see dshlog.Vocabulary).
//
// # The mapping
//
// Every dsh event becomes one event of the same type, with the data
// dshlog.Vocabulary gives it (dsh's own types — request/header,
// command/run, goal/change, approval/*, tool-workflow/* … — keep their data
// and are carried past by the projections; packed chunk rows are expanded
// into assistant/chunk events). Around each assistant/message the import
// adds what the vocabulary rewrite leaves out:
//
//   - before it, assistant/reasoning {"text","source"} for each reasoning
//     part of the message, so the transcript attaches it to the message;
//   - after it, usage {"inputTokens","outputTokens","cachedTokens"?,
//     "model"?} when the message's usage has both token counts, none
//     negative and their sum within int64: dsh counts
//     cache reads (cacheReadTokens) and writes apart from inputTokens, §8
//     counts them in it, cachedTokens being the reads; the model is the
//     message's; dsh's usage object is kept as "source":{"seq","usage"}.
//
// Events the import adds or rewrote (but assistant/chunk deltas) carry
// "source":{"seq"}: the dsh seq of the event they came from. Seqs are renumbered from 0 (the added events
// take seqs); times are dsh's (an event without one gets the previous
// time + 1, the header's createdAt for the first). createdAt is the
// header's. Labels: source "dsh", sourceFile, sourceId (the header's id),
// cwd, model (the first request/header's, else the first message's),
// title (the first session/title), and the header's other keys as
// dsh.<key>.
package dsh
