// Package eventlog turns bytes into events and events into bytes: the
// sessionlog file format, version 1. It knows nothing about files, stores,
// locks or durability; it works on byte slices, io.Reader and appends.
//
// # Format
//
// A log is a header row followed by event rows, each a JSON object on one
// line ending in '\n':
//
//	{"format":"sessionlog","version":1,"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","createdAt":1764450000000}
//	{"seq":0,"type":"user/message","time":1764450000100,"data":{"text":"hi"}}
//	{"seq":1,"type":"assistant/chunk","n":3,"time":[1764450000200,1764450000201,1764450000205],"data":[{"text":"He"},{"text":"llo"},{"text":"!"}]}
//	{"seq":4,"type":"assistant/message","time":1764450000300,"data":{"text":"Hello!"}}
//
// The header names the format and version (any other version is refused
// with a *VersionError), the session ID (an upper-case ULID), the creation
// time in Unix milliseconds and, optionally, a parent (fork or child) and
// labels. Unknown header keys are ignored.
//
// An event row has exactly the keys seq, type, time and data, in any order
// (an unknown or repeated key is corruption). seq and time are JSON
// integers >= 0; type is 1-128 characters from A-Z a-z 0-9 . _ : / -;
// data is any JSON value (RFC 8259: strings are valid UTF-8; arrays and
// objects nest at most MaxDepth levels, one less inside a packed row),
// absent meaning null. A packed row adds n >= 2 and
// holds n consecutive events of one type: time and data are arrays of n
// elements. Rows are contiguous: the first has seq 0 (a fork: parent.seq+1),
// every next one the previous + 1 (a packed row counts n). A row larger than
// MaxRowSize is refused when written and is corruption when read. The
// limits (limits.go) are one definition for the writer and the reader: the
// Encoder never writes a row the Reader refuses.
//
// These constants and rules are part of the wire format: changing them
// needs a new format version.
//
// # Canonical bytes
//
// canon(e) is {"seq":S,"type":"T","time":MS,"data":D} with D the stored
// data bytes or null (AppendCanon). An unpacked row as the Encoder writes it
// is exactly canon(e). Digests are computed over canon bytes, so they do not
// depend on packing or key order.
//
// # Reading
//
// A Reader streams the events of a log and ends in exactly one of: a clean
// end, a torn tail (bytes after the last '\n', or rows holding NUL bytes
// with no valid row after them: the remains of a write that was never
// acknowledged) reported by Torn, or an error: a *CorruptError with the
// path, byte offset and expected seq, a *VersionError, or an I/O error.
// Event hands out a copy of the event's data, the caller's; Borrow lends
// the Reader's own bytes, valid until the next event, for a caller that
// copies only what it keeps (a replay into projection.Borrowers); of a raw
// log, DataOffset says where in the source those bytes lie.
//
// # Writing
//
// An Encoder appends the rows of a batch of events to a byte slice, packing
// runs of configured types. Events are checked first with Storable; the
// Encoder trusts what it is given.
//
// It exports what a reader or writer of the format needs. The zstd frame
// layer it builds on is internal/format/zstdframe; the plumbing the stores
// share over it (bounded reads of a log's ends, seeking, salvage) is
// internal/format/logfile, which eventlog does not import.
//
// Everything in this package is safe for concurrent use except a Reader,
// which belongs to one goroutine. A zstd Reader decodes its next few frames
// on goroutines of its own while its caller parses the current one; each
// ends with its decode, and ZstdCodec.Close waits for them.
package eventlog
