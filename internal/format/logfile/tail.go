package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// Tail is what a bounded read of a log's two ends tells: the header and
// the last event, and where they stand.
type Tail struct {
	Header eventlog.Header
	Last   eventlog.Event
	Found  bool // false when the log holds no row
	// HeaderEnd is the offset just past the header row (raw) or the
	// offset of the frame holding it (zstd).
	HeaderEnd int64
	// End is the offset just past the row (raw) or the data frame (zstd)
	// holding the last event, HeaderEnd when there is none; LastFrame is
	// that data frame and LastContent its rows, decoded (zstd; the header
	// row first when it is the header's frame).
	End         int64
	LastFrame   zstdframe.Frame
	LastContent []byte
}

// ReadTail reads a raw log's header and last event, a bounded amount (see
// ReadHeader and LastEvent), and classifies what follows the last row as
// a full read does (eventlog.Reader, the one classifier of docs/format.md §9): a
// torn tail is passed over, anything else there — a tail longer than any
// row without a NUL byte, say — is a *eventlog.CorruptError. Only those bytes are
// read: a torn tail is at most the last write.
func ReadTail(src io.ReaderAt, size int64, path string) (Tail, error) {
	hdr, end, err := ReadHeader(src, path)
	if err != nil {
		return Tail{}, err
	}
	last, rowEnd, found, err := lastEvent(src, size, end)
	t := Tail{Header: hdr, Last: last, Found: found, HeaderEnd: end, End: end}
	next := hdr.FirstSeq()
	if found {
		t.End, next = rowEnd, last.Seq+1
	}
	if err == nil && t.End < size {
		err = classifyRest(src, t.End, size, next, path)
	}
	return t, err
}

// classifyRest reads the bytes of a raw log from off, just past its last
// row, to size with an eventlog.Reader, which tells a torn tail (nil) from
// corruption. No row decodes there (lastEvent found none), so the eventlog.Reader
// sees only what a crash may have left.
func classifyRest(src io.ReaderAt, off, size, next int64, path string) error {
	r := eventlog.NewReader(io.NewSectionReader(src, off, size-off), eventlog.WithPath(path), eventlog.WithStart(off, next))
	for r.Next() {
	}
	return r.Err()
}

// ReadZstdTail reads a zstd log's header (from its first data frame:
// skippable frames before it are passed over) and last event (from its
// last data frame, found through the tail frame or, after a crash, by
// walking frame headers without decompressing).
func ReadZstdTail(src io.ReaderAt, size int64, codec *eventlog.ZstdCodec, path string) (Tail, error) {
	return ReadZstdTailAfter(src, size, codec, path, nil)
}

// ReadZstdTailAfter is ReadZstdTail told where a data frame of the log
// stands: known, when not nil, is asked for it (from an earlier read of
// the same file) only when there is no tail frame, and then the frame
// headers are walked from the end of that frame instead of from the start,
// so the walk is bounded by what was written since. What known returns is
// a hint: when it does not name a whole data frame of src (the zero Frame
// does not), the headers are walked from the start.
func ReadZstdTailAfter(src io.ReaderAt, size int64, codec *eventlog.ZstdCodec, path string, known func() zstdframe.Frame) (Tail, error) {
	var t Tail
	hdrOff := int64(0)
	for {
		n, skippable, err := zstdframe.Extent(src, hdrOff, size)
		if err != nil || n <= 0 || !skippable {
			break
		}
		hdrOff += n
	}
	first, err := readFrameAt(src, hdrOff, size, codec, path)
	if err != nil {
		return t, err
	}
	r := eventlog.NewZstdReader(bytes.NewReader(first.raw), codec, eventlog.WithPath(path))
	if t.Header, err = r.Header(); err != nil {
		return t, err
	}
	t.HeaderEnd, t.End = hdrOff, hdrOff
	offs, viaTail, partial, err := lastFrames(src, size, known)
	if err != nil {
		return t, fmt.Errorf("eventlog: reading the tail of %q: %w", path, err)
	}
	// The last frame that decodes holds the last event (a torn last frame
	// is passed over). The frame a tail frame names was durable before the
	// tail frame was written: when it does not decode, the log is damaged.
	for i := len(offs) - 1; i >= 0; i-- {
		f, err := readFrameAt(src, offs[i][0], offs[i][0]+offs[i][1], codec, path)
		if err != nil {
			if viaTail || f.tooLarge {
				return t, err // a frame over the limit is no torn write either
			}
			continue
		}
		content := f.content
		if offs[i][0] == hdrOff {
			content = content[bytes.IndexByte(content, '\n')+1:]
		}
		if len(content) == 0 {
			if offs[i][0] == hdrOff {
				return t, nil
			}
			if viaTail {
				// The frame the tail frame names holds no rows (an empty
				// frame): the last event is in an earlier frame.
				offs, _ = dataFrames(src, size, zstdframe.Frame{})
				viaTail = false
				i = len(offs)
			}
			continue
		}
		t.Last, t.Found, err = LastEvent(bytes.NewReader(content), int64(len(content)), 0)
		if t.Found {
			t.End, t.LastFrame, t.LastContent = offs[i][0]+offs[i][1], zstdframe.Frame{Offset: offs[i][0], Len: offs[i][1]}, f.content
		}
		return t, err
	}
	if partial {
		// No rows from the known frame on: the last event is before it.
		return ReadZstdTailAfter(src, size, codec, path, nil)
	}
	return t, nil
}

// ReadFrame reads the frame at off (which must end by limit) and, for a
// data frame, decodes it: its content checksum is checked, and a frame
// over zstdframe.MaxContent is refused.
func ReadFrame(src io.ReaderAt, off, limit int64, codec *eventlog.ZstdCodec, path string) (zstdframe.Frame, []byte, error) {
	n, skippable, err := zstdframe.Extent(src, off, limit)
	if err != nil || n <= 0 {
		return zstdframe.Frame{}, nil, &eventlog.CorruptError{Path: path, Offset: off, Seq: -1, Reason: "no complete frame"}
	}
	f := zstdframe.Frame{Offset: off, Len: n, Skippable: skippable}
	if skippable {
		return f, nil, nil
	}
	fa, err := readFrameAt(src, off, limit, codec, path)
	return f, fa.content, err
}

type frameAt struct {
	raw     []byte
	content []byte
	// tooLarge is set, with an error, when the frame's content exceeds
	// zstdframe.MaxContent.
	tooLarge bool
}

// readFrameAt reads and decodes the data frame at off (limit: the offset
// it must end by).
func readFrameAt(src io.ReaderAt, off, limit int64, codec *eventlog.ZstdCodec, path string) (frameAt, error) {
	n, _, err := zstdframe.Extent(src, off, limit)
	if err != nil || n <= 0 {
		return frameAt{}, &eventlog.CorruptError{Path: path, Offset: off, Seq: -1, Reason: "no complete frame"}
	}
	raw := make([]byte, n)
	if _, err := src.ReadAt(raw, off); err != nil {
		return frameAt{}, fmt.Errorf("eventlog: reading %q at offset %d: %w", path, off, err)
	}
	content, err := codec.DecodeFrame(raw, nil)
	if err != nil {
		return frameAt{tooLarge: errors.Is(err, zstdframe.ErrTooLarge)},
			&eventlog.CorruptError{Path: path, Offset: off, Seq: -1, Reason: "frame fails decoding: " + err.Error()}
	}
	return frameAt{raw: raw, content: content}, nil
}

// lastFrames returns {offset, length} of data frames to try for the last
// event, last one last: the one named by a tail frame at the very end
// (viaTail), or the data frames found by walking the headers (from the
// end of known, when it names a data frame: partial, see dataFrames).
func lastFrames(src io.ReaderAt, size int64, known func() zstdframe.Frame) (offs [][2]int64, viaTail, partial bool, err error) {
	if at := size - zstdframe.TailSize; at >= 0 {
		var b [zstdframe.TailSize]byte
		if _, err := src.ReadAt(b[:], at); err != nil {
			return nil, false, false, err
		}
		if off, n, ok := zstdframe.ParseTail(b[:], at); ok && off >= 0 && n > 0 && off <= at-n {
			// A tail frame names a whole data frame, or it is not one.
			if m, skippable, err := zstdframe.Extent(src, off, off+n); err == nil && m == n && !skippable {
				return [][2]int64{{off, n}}, true, false, nil
			}
		}
	}
	var hint zstdframe.Frame
	if known != nil {
		hint = known()
	}
	offs, partial = dataFrames(src, size, hint)
	return offs, false, partial, nil
}

// dataFrames returns {offset, length} of every data frame found by walking
// the frame headers; when known names a whole data frame, of known and
// the data frames after it only (partial).
func dataFrames(src io.ReaderAt, size int64, known zstdframe.Frame) (offs [][2]int64, partial bool) {
	var frames []zstdframe.Frame
	if end := known.Offset + known.Len; known.Len > 0 && !known.Skippable && known.Offset >= 0 && end <= size {
		if n, skippable, err := zstdframe.Extent(src, known.Offset, end); err == nil && n == known.Len && !skippable {
			after, _ := zstdframe.FramesFrom(src, end, size)
			frames, partial = append([]zstdframe.Frame{known}, after...), true
		}
	}
	if frames == nil {
		frames, _ = zstdframe.Frames(src, size)
	}
	for _, f := range frames {
		if !f.Skippable {
			offs = append(offs, [2]int64{f.Offset, f.Len})
		}
	}
	return offs, partial
}

// tailWindow is the first amount LastEvent reads from the end of a log.
const tailWindow = 16 << 10

// LastEvent finds the last event of a raw log of size bytes by reading
// backward from its end: the last '\n'-ended line that decodes as a row.
// A torn tail (a partial row, NUL bytes) is passed over. It reads a bounded
// amount — one window, grown only for a row larger than the window — and
// does not check the rest of the log; eventlog.Reader does that. headerEnd is the
// offset just past the header row: no row is looked for before it. found
// is false when the log holds no row.
func LastEvent(src io.ReaderAt, size, headerEnd int64) (last eventlog.Event, found bool, err error) {
	last, _, found, err = lastEvent(src, size, headerEnd)
	return last, found, err
}

// lastEvent is LastEvent that also returns the offset just past the last
// row (its '\n' included).
func lastEvent(src io.ReaderAt, size, headerEnd int64) (last eventlog.Event, rowEnd int64, found bool, err error) {
	return lastEventLimit(src, size, headerEnd, eventlog.MaxRowSize)
}

// lastEventLimit is lastEvent passing over lines longer than limit bytes
// instead of eventlog.MaxRowSize (tests lower it: LastEventLimit).
func lastEventLimit(src io.ReaderAt, size, headerEnd, limit int64) (last eventlog.Event, rowEnd int64, found bool, err error) {
	end := size // lines are searched in [headerEnd, end)
	window := int64(tailWindow)
	var buf []byte
	for end > headerEnd {
		start := max(headerEnd, end-window)
		n := end - start
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		b := buf[:n]
		if _, err := src.ReadAt(b, start); err != nil && err != io.EOF {
			return last, 0, false, fmt.Errorf("eventlog: reading the tail at offset %d: %w", start, err)
		}
		// Skip bytes after the last '\n' (a partial row).
		nl := bytes.LastIndexByte(b, '\n')
		if nl < 0 {
			if start == headerEnd {
				return last, 0, false, nil
			}
			end = start // all of it belongs to the partial last line
			continue
		}
		b = b[:nl]
		for {
			prev := bytes.LastIndexByte(b, '\n')
			if prev < 0 && start > headerEnd {
				break // the line starts before the window
			}
			line := b[prev+1:]
			if evs, err := eventlog.DecodeRow(line); err == nil {
				rowEnd := start + int64(len(b)) + 1
				return evs[len(evs)-1], rowEnd, true, nil
			}
			if prev < 0 {
				return last, 0, false, nil
			}
			b = b[:prev]
		}
		// The line b starts before the window. Read it again in a larger
		// window, unless it is too long to be a row: then pass over it.
		if int64(len(b)) > limit {
			end = start
			continue
		}
		end = start + int64(len(b)) + 1
		window = 2 * max(window, int64(len(b))+1)
	}
	return last, 0, false, nil
}

// headWindow is the first amount ReadHeader reads.
const headWindow = 4 << 10

// ReadHeader reads and decodes the header row at the start of src,
// reading a bounded amount (the row, in windows of growing size), and
// returns it with the offset just past it.
func ReadHeader(src io.ReaderAt, path string) (eventlog.Header, int64, error) {
	return readHeader(src, path, eventlog.MaxRowSize)
}

// readHeader is ReadHeader for a header row of at most limit bytes (tests
// lower it: ReadHeaderLimit).
func readHeader(src io.ReaderAt, path string, limit int64) (eventlog.Header, int64, error) {
	var b []byte
	for n := int64(headWindow); ; n *= 2 {
		n = min(n, limit+1)
		b = append(b[:0], make([]byte, n)...)
		got, err := src.ReadAt(b, 0)
		if err != nil && err != io.EOF {
			return eventlog.Header{}, 0, fmt.Errorf("eventlog: reading the header of %q: %w", path, err)
		}
		b = b[:got]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			r := eventlog.NewReader(bytes.NewReader(b[:i+1]), eventlog.WithPath(path))
			h, err := r.Header()
			return h, int64(i + 1), err
		}
		if int64(got) < n || n > limit {
			r := eventlog.NewReader(bytes.NewReader(b), eventlog.WithPath(path))
			_, err := r.Header()
			return eventlog.Header{}, 0, err
		}
	}
}
