package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// Salvage reads a log past damage, for inspection: it yields every event
// it can decode, in seq order, and reports each damaged range it passed
// over with the seqs lost there. A raw log restarts at the row after a bad
// one; a zstd log (codec not nil) at the next frame that decodes. Events
// whose seq is not above the last one yielded are dropped as damage. A bad
// header is an error: nothing can be salvaged without it. Salvage never
// changes the file.
func Salvage(src io.ReaderAt, size int64, codec *eventlog.ZstdCodec, path string, yield func(eventlog.Event) bool) (eventlog.SalvageResult, error) {
	open := func(off int64) SalvageReader {
		sec := io.NewSectionReader(src, off, size-off)
		opts := []eventlog.ReaderOption{eventlog.WithPath(path)}
		if off > 0 {
			opts = append(opts, eventlog.WithStart(off, AnySeq))
		}
		if codec != nil {
			return eventlog.NewZstdReader(sec, codec, opts...)
		}
		return eventlog.NewReader(sec, opts...)
	}
	next := func(off int64) (int64, bool, error) { return nextBoundary(src, size, off, codec != nil) }
	return SalvageWith(open, next, size, path, yield)
}

// AnySeq, as eventlog.WithStart's nextSeq, accepts whatever seq the first
// row holds: a salvage read restarting after damage does not know it.
const AnySeq = math.MinInt64

// SalvageReader is a reader SalvageWith reads with: a *eventlog.Reader, or a
// reader of another layout of the same rows (a sealed log's).
type SalvageReader interface {
	Header() (eventlog.Header, error)
	Next() bool
	Event() eventlog.Event
	Err() error
	Torn() *eventlog.TornTail
}

// SalvageWith is Salvage over the readers open makes: open(0) reads the
// log from its header, open(off) from the row or frame boundary at off,
// accepting any seq there (eventlog.WithStart(off, AnySeq)); next returns where
// reading can restart after damage at off, and false when nowhere. size
// is the file's.
func SalvageWith(open func(off int64) SalvageReader, next func(off int64) (int64, bool, error), size int64, path string, yield func(eventlog.Event) bool) (eventlog.SalvageResult, error) {
	var res eventlog.SalvageResult
	r := open(0)
	hdr, err := r.Header()
	if err != nil {
		return res, err
	}
	res.Header = hdr
	expected := hdr.FirstSeq()
	pending := -1 // index of the last skip, waiting to learn how many seqs it lost
	restartedAt := int64(-1)
	for {
		for r.Next() {
			e := r.Event()
			if e.Seq < expected {
				res.Skips = append(res.Skips, eventlog.Skip{Offset: restartedAt, FirstLost: 1, LastLost: 0,
					Reason: fmt.Sprintf("seq %d again, after %d", e.Seq, expected-1)})
				continue
			}
			if pending >= 0 {
				res.Skips[pending].LastLost = e.Seq - 1
				pending = -1
			} else if e.Seq > expected {
				res.Skips = append(res.Skips, eventlog.Skip{Offset: restartedAt, FirstLost: expected, LastLost: e.Seq - 1,
					Reason: fmt.Sprintf("seq %d where %d was expected", e.Seq, expected)})
			}
			expected = e.Seq + 1
			res.Events++
			if !yield(e) {
				return res, nil
			}
		}
		var ce *eventlog.CorruptError
		err := r.Err()
		if err == nil {
			res.Torn = r.Torn()
			break
		}
		if !errors.As(err, &ce) {
			return res, err
		}
		if ce.Offset != restartedAt && pending < 0 {
			// The row (or frame) may be intact with an unexpected seq:
			// read it again, accepting its seq.
			restartedAt = ce.Offset
			r = open(ce.Offset)
			continue
		}
		resume, ok, err := next(ce.Offset)
		if err != nil {
			return res, fmt.Errorf("eventlog: salvaging %q: %w", path, err)
		}
		if !ok {
			resume = size
		}
		if p := pending; p >= 0 && res.Skips[p].Offset+res.Skips[p].Bytes == ce.Offset {
			res.Skips[p].Bytes = resume - res.Skips[p].Offset // one damaged range
		} else {
			res.Skips = append(res.Skips, eventlog.Skip{Offset: ce.Offset, Bytes: resume - ce.Offset,
				FirstLost: expected, LastLost: -1, Reason: ce.Reason})
			pending = len(res.Skips) - 1
		}
		if resume >= size {
			break
		}
		restartedAt = resume
		r = open(resume)
	}
	if p := pending; p >= 0 && res.Skips[p].LastLost == -1 && res.Skips[p].Offset+res.Skips[p].Bytes < size {
		res.Skips[p].LastLost = expected - 1 // nothing decodable came after it
	}
	return res, nil
}

// nextBoundary finds where reading can restart after damage at off: after
// the next '\n' (raw), or at the next zstd frame magic (zstd).
func nextBoundary(src io.ReaderAt, size, off int64, zstd bool) (int64, bool, error) {
	buf := make([]byte, 64<<10)
	pos := off + 1
	for pos < size {
		n, err := src.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		if err != nil && err != io.EOF {
			return 0, false, err
		}
		b := buf[:n]
		if zstd {
			if i := bytes.Index(b, zstdframe.MagicBytes); i >= 0 {
				return pos + int64(i), true, nil
			}
			pos += int64(max(n-3, 1))
			continue
		}
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return pos + int64(i) + 1, true, nil
		}
		pos += int64(n)
	}
	return 0, false, nil
}
