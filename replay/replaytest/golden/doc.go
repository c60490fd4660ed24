// Package golden writes a projection's state as a golden file and compares
// two of them, for replaytest (in tests) and `logtool replay --golden` (in
// the binary): both check a state against its golden with one Check (read,
// compare, or with update create or rewrite), so they produce and read the
// same bytes. It does not import package testing, so the CLI links none of
// it.
//
// # The file
//
// A golden file is the projection's MarshalState, indented with two spaces,
// plus a final newline (Marshal). Projections marshal deterministically
// (struct fields in order, map keys sorted), so the bytes are stable and a
// change reads well in a code review. Beside a fixture it is named
// <fixture>.<name>-v<version>.golden.json (FileName): one per projection
// and version, so bumping a projection's version starts a new golden.
//
// # The comparison
//
// Compare parses both sides keeping the order of object keys and walks them
// together. Two states match when they are the same JSON value with object
// keys in the same order; whitespace and string escapes do not matter (a
// golden reformatted by an editor still matches). A mismatch names the first
// differing JSON path in document order, with both values:
//
//	messages[3].text: golden "Hello", got "Hullo" (first of 2 differences)
//
// Long strings are shown as a window around their first differing
// character; long objects and arrays are cut. The message is one line, as
// logtool prints errors.
package golden
