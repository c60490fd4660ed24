package logfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// Seeking into a log without reading it from its start: what Stat does for
// the last event, for the events before it. A raw row starts at the
// beginning of a line, so any offset leads to the next row; a zstd frame
// is found backward from the frame after it (FrameBefore). Neither checks
// the log between the start and the place sought: that is a full read's
// business (eventlog.Reader), and a row or frame found this way is decoded and
// checked like any other.

// seekWindow is the first amount RowAfter and FrameBefore read.
const seekWindow = 16 << 10

// RowAfter finds the first row of a raw log that starts at or after off
// (a row starts just after a '\n') and ends by limit, and returns its
// offset and its seq. A line that does not decode as a row is passed over.
// found is false when no row is found before limit.
func RowAfter(src io.ReaderAt, off, limit int64) (rowOff, seq int64, found bool, err error) {
	if off < 1 {
		off = 1 // the header row starts at 0: the first row after it
	}
	pos := off - 1 // a '\n' at pos or later ends the line before the row
	var buf []byte
	for pos < limit {
		// The next '\n' at or after pos.
		nl := int64(-1)
		for at := pos; at < limit && nl < 0; {
			b, err := readWindow(src, &buf, at, min(seekWindow, limit-at))
			if err != nil {
				return 0, 0, false, err
			}
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				nl = at + int64(i)
			}
			at += int64(len(b))
		}
		if nl < 0 {
			return 0, 0, false, nil
		}
		start := nl + 1
		line, end, err := lineAt(src, &buf, start, limit)
		if err != nil || line == nil {
			return 0, 0, false, err
		}
		if evs, err := eventlog.DecodeRow(line); err == nil {
			return start, evs[0].Seq, true, nil
		}
		pos = end - 1 // its '\n': the next line's row
	}
	return 0, 0, false, nil
}

// lineAt returns the '\n'-ended line that starts at off (without its '\n')
// and the offset past it; nil when none ends by limit or within
// eventlog.MaxRowSize.
func lineAt(src io.ReaderAt, buf *[]byte, off, limit int64) (line []byte, end int64, err error) {
	for n := int64(seekWindow); ; n *= 4 {
		n = min(n, limit-off, eventlog.MaxRowSize+1)
		if n <= 0 {
			return nil, 0, nil
		}
		b, err := readWindow(src, buf, off, n)
		if err != nil {
			return nil, 0, err
		}
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return b[:i], off + int64(i) + 1, nil
		}
		if int64(len(b)) < n || n == limit-off || n > eventlog.MaxRowSize {
			return nil, 0, nil
		}
	}
}

// readWindow reads up to n bytes at off into *buf (grown as needed) and
// returns them: fewer at the end of src.
func readWindow(src io.ReaderAt, buf *[]byte, off, n int64) ([]byte, error) {
	if int64(cap(*buf)) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	got, err := src.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("eventlog: reading at offset %d: %w", off, err)
	}
	return b[:got], nil
}

// FrameRows is what a data frame holds: the seq of its first row and the
// seq that follows its last (equal for a frame with no rows).
type FrameRows struct {
	First, Next int64
}

// FrameBefore finds the frame of a zstd log that ends exactly at end (the
// offset of a frame known to start there, or just past the last data
// frame) and starts at or after from (the offset of the header's frame:
// none starts before it that FrameBefore must find). It searches backward
// for a frame magic whose frame, walked, ends at end; a data frame must
// also decode, its content checksum included, and hold whole rows, whose
// seqs it returns with its content (the header's row passed over when the
// frame starts at from). A skippable frame (a tail frame, an index) holds
// no rows: rows is zero. An error means no such frame: damage, for a full
// read to classify. hint, when above the first window, is the window
// searched first (frames of one log are of like sizes).
func FrameBefore(src io.ReaderAt, end, from, hint int64, codec *eventlog.ZstdCodec) (f zstdframe.Frame, rows FrameRows, content []byte, err error) {
	var buf []byte
	for w := max(int64(seekWindow), hint); ; w *= 4 {
		lo := max(from, end-w)
		b, err := readWindow(src, &buf, lo, end-lo)
		if err != nil {
			return f, rows, nil, err
		}
		if int64(len(b)) != end-lo {
			return f, rows, nil, fmt.Errorf("eventlog: the log ends before offset %d", end)
		}
		// Candidates from the nearest to end: a false magic inside a
		// frame's compressed bytes fails the walk or the decode.
		for i := len(b) - 4; i >= 0; i-- {
			if !zstdframe.MagicAt(b[i:]) {
				continue
			}
			n, skippable, need, werr := zstdframe.ExtentOf(b[i:])
			if werr != nil || need != 0 || n != len(b)-i {
				continue
			}
			at := lo + int64(i)
			f = zstdframe.Frame{Offset: at, Len: int64(n), Skippable: skippable}
			if skippable {
				if binary.LittleEndian.Uint32(b[i:]) == zstdframe.TailMagic {
					if _, _, ok := zstdframe.ParseTail(b[i:], at); !ok {
						continue
					}
				}
				return f, FrameRows{}, nil, nil
			}
			if content, err := codec.DecodeFrame(b[i:], nil); err == nil {
				if rows, ok := FrameRowsOf(content, at == from); ok {
					return f, rows, content, nil
				}
			}
		}
		if lo == from || w > zstdframe.MaxBytes {
			return zstdframe.Frame{}, rows, nil, fmt.Errorf("eventlog: no frame ends at offset %d", end)
		}
	}
}

// FrameRowsOf reads the seqs of the first and last rows of a data frame's
// content (the header's row passed over when header is true); ok is false
// when it does not hold whole rows.
func FrameRowsOf(content []byte, header bool) (rows FrameRows, ok bool) {
	if len(content) > 0 && content[len(content)-1] != '\n' {
		return rows, false
	}
	if header {
		content = content[bytes.IndexByte(content, '\n')+1:]
	}
	if len(content) == 0 {
		return rows, true // no rows: First == Next (zero)
	}
	first, err := eventlog.DecodeRow(content[:bytes.IndexByte(content, '\n')])
	if err != nil {
		return rows, false
	}
	rows.First = first[0].Seq
	lastStart := bytes.LastIndexByte(content[:len(content)-1], '\n') + 1
	last, err := eventlog.DecodeRow(content[lastStart : len(content)-1])
	if err != nil {
		return rows, false
	}
	rows.Next = last[len(last)-1].Seq + 1
	return rows, rows.Next > rows.First
}
