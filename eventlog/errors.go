package eventlog

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors of the package. Every error the package returns wraps one
// of them, so callers tell cases apart with errors.Is.
var (
	// ErrCorrupt is wrapped by every *CorruptError: bytes that cannot be a
	// sessionlog log and are not a torn tail.
	ErrCorrupt = errors.New("eventlog: corrupt log")
	// ErrVersion is wrapped by *VersionError: a header of a format version
	// this package does not read.
	ErrVersion = errors.New("eventlog: unsupported format version")
	// ErrInvalidEvent is returned when an event given to the package (to be
	// written) breaks the row rules: a bad type, a negative time, data that is
	// not JSON.
	ErrInvalidEvent = errors.New("eventlog: invalid event")
	// ErrTooLarge is returned when an event's row would exceed MaxRowSize.
	ErrTooLarge = errors.New("eventlog: row too large")
)

// CorruptError describes damage found in a log: where it is and what was
// wrong. It wraps ErrCorrupt. The fix for a corrupt log is an explicit
// salvage (`logtool repair --salvage`); nothing is ever skipped silently.
type CorruptError struct {
	// Path is the file the bytes came from, when known.
	Path string
	// Offset is the byte offset of the damaged row (or frame) in the file,
	// or -1 when unknown (an event found by a reader of the logical log).
	Offset int64
	// Seq is the seq the damaged row should hold, or -1 when unknown
	// (the header, say).
	Seq int64
	// Reason says what is wrong, in words.
	Reason string
	// Fix says how to repair the log; "" for the default: an explicit
	// salvage for damaged rows, a copy of the file for a damaged header
	// (offset 0, where a salvage would keep nothing).
	Fix string
}

// Error implements error.
func (e *CorruptError) Error() string {
	var b []byte
	b = append(b, "eventlog: corrupt log"...)
	if e.Path != "" {
		b = append(b, " in "...)
		b = strconv.AppendQuote(b, e.Path)
	}
	if e.Offset >= 0 {
		b = append(b, " at offset "...)
		b = strconv.AppendInt(b, e.Offset, 10)
	}
	if e.Seq >= 0 {
		b = append(b, " (seq "...)
		b = strconv.AppendInt(b, e.Seq, 10)
		b = append(b, ')')
	}
	b = append(b, ": "...)
	b = append(b, e.Reason...)
	fix := e.Fix
	switch {
	case fix != "":
	case e.Offset == 0:
		fix = "the start of the file is damaged, so a salvage would keep nothing: restore the file from a copy"
	default:
		fix = "to cut the log at the damage: logtool repair --salvage"
	}
	b = append(b, " ("...)
	b = append(b, fix...)
	b = append(b, ')')
	return string(b)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// VersionError reports a header whose format version is not supported.
// It wraps ErrVersion.
type VersionError struct {
	// Path is the file the header came from, when known.
	Path string
	// Found is the version in the header.
	Found int64
	// Supported lists the versions this package reads.
	Supported []int
}

// Error implements error.
func (e *VersionError) Error() string {
	where := ""
	if e.Path != "" {
		where = " in " + strconv.Quote(e.Path)
	}
	return fmt.Sprintf("eventlog: unsupported format version %d%s (supported: %v)", e.Found, where, e.Supported)
}

// Unwrap returns ErrVersion.
func (e *VersionError) Unwrap() error { return ErrVersion }

// TornTail describes an incomplete tail that a reader dropped: bytes of a
// write that was never acknowledged (docs/format.md §9). It is not an error.
type TornTail struct {
	// Offset is where the torn bytes start: the length a repaired file has.
	Offset int64
	// Bytes is how many bytes were dropped.
	Bytes int64
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidEvent, fmt.Sprintf(format, args...))
}
