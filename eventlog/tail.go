package eventlog

import (
	"bytes"
	"fmt"
	"io"
)

// tailWindow is the first amount LastEvent reads from the end of a log.
const tailWindow = 16 << 10

// LastEvent finds the last event of a raw log of size bytes by reading
// backward from its end: the last '\n'-ended line that decodes as a row.
// A torn tail (a partial row, NUL bytes) is passed over. It reads a bounded
// amount — one window, grown only for a row larger than the window — and
// does not check the rest of the log; Reader does that. headerEnd is the
// offset just past the header row: no row is looked for before it. found
// is false when the log holds no row.
func LastEvent(src io.ReaderAt, size, headerEnd int64) (last Event, found bool, err error) {
	last, _, found, err = lastEvent(src, size, headerEnd)
	return last, found, err
}

// lastEvent is LastEvent that also returns the offset just past the last
// row (its '\n' included).
func lastEvent(src io.ReaderAt, size, headerEnd int64) (last Event, rowEnd int64, found bool, err error) {
	end := size // lines are searched in [headerEnd, end)
	window := int64(tailWindow)
	var buf []byte
	var r row
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
			if decodeRow(line, &r) == nil {
				k := r.n - 1
				d := r.datas[k]
				if len(d) == 4 && string(d) == "null" {
					d = nil
				}
				rowEnd := start + int64(len(b)) + 1
				return Event{Seq: r.seq + int64(k), Type: string(r.typ), Time: r.times[k], Data: cloneData(d)}, rowEnd, true, nil
			}
			if prev < 0 {
				return last, 0, false, nil
			}
			b = b[:prev]
		}
		// The line b starts before the window. Read it again in a larger
		// window, unless it is too long to be a row: then pass over it.
		if int64(len(b)) > MaxRowSize {
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
func ReadHeader(src io.ReaderAt, path string) (Header, int64, error) {
	var b []byte
	for n := int64(headWindow); ; n *= 2 {
		n = min(n, MaxRowSize+1)
		b = append(b[:0], make([]byte, n)...)
		got, err := src.ReadAt(b, 0)
		if err != nil && err != io.EOF {
			return Header{}, 0, fmt.Errorf("eventlog: reading the header of %q: %w", path, err)
		}
		b = b[:got]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			r := NewReader(bytes.NewReader(b[:i+1]), WithPath(path))
			h, err := r.Header()
			return h, int64(i + 1), err
		}
		if int64(got) < n || n > MaxRowSize {
			r := NewReader(bytes.NewReader(b), WithPath(path))
			_, err := r.Header()
			return Header{}, 0, err
		}
	}
}
