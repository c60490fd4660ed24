package logfile

import (
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
)

// ReadHeaderLimit is ReadHeader for a header row of at most limit bytes
// instead of eventlog.MaxRowSize (tests only): the overlong check without
// rows of tens of megabytes.
var ReadHeaderLimit = readHeader

// LastEventLimit is LastEvent passing over lines longer than limit bytes
// instead of eventlog.MaxRowSize (tests only).
func LastEventLimit(src io.ReaderAt, size, headerEnd, limit int64) (eventlog.Event, bool, error) {
	last, _, found, err := lastEventLimit(src, size, headerEnd, limit)
	return last, found, err
}
