package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
)

const readChunk = 64 << 10

// Reader reads a raw log from an io.Reader: the header, then the events of
// its rows in order, packed rows unpacked. It is a scanner:
//
//	r := eventlog.NewReader(f, eventlog.WithPath(name))
//	for r.Next() {
//		e := r.Event()
//	}
//	if err := r.Err(); err != nil { ... } // *CorruptError, *VersionError or I/O
//	if t := r.Torn(); t != nil { ... }    // a torn tail was dropped
//
// A read ends in exactly one of three ways: clean, a torn tail (Err is nil,
// Torn says where and how much), or an error. Torn tails and corruption are
// told apart per docs/format.md §9: bytes after the last '\n', or a row
// holding NUL bytes with no valid row after it, are torn — unless they hold
// a run of more than MaxRowSize bytes without a NUL, which no crash leaves;
// any other bad row is corruption, reported with its offset and the seq it
// should hold.
//
// Memory is bounded by one row (MaxRowSize): a longer line is never held.
// A Reader is not safe for concurrent use.
type Reader struct {
	src  io.Reader
	path string

	buf    []byte
	r, w   int   // unread bytes are buf[r:w]
	bufOff int64 // file offset of buf[r]
	eof    bool

	hdr     Header
	hdrDone bool
	next    int64 // seq the next row must start with
	from    int64 // events below it are decoded and checked, not returned
	end     int64 // offset just past the last good row

	cur     row
	curLine []byte // the line cur was decoded from (raw), its datas point into it
	curOff  int64  // curLine's offset in the source
	curIdx  int    // next event of cur to return
	curType string // cur's type, interned
	slab    []byte // room for the data of cur's events still to return
	slabbed bool   // slab is cur's (a packed row, once an event is returned)
	ev      Event  // the current event, its Data borrowed (see Borrow)
	types   map[string]string

	lastLen int // bytes (with the newline) of the last line readLine returned
	// lastRun is the longest run of bytes without a NUL in the last line
	// readLine returned, when that line was longer than MaxRowSize (0
	// otherwise: a shorter line cannot hold a longer run).
	lastRun int64

	zs *zstdState // nil for a raw log

	maxRow int // MaxRowSize; tests lower it (SetReaderMaxRowSize)

	done bool
	err  error
	torn *TornTail
}

// ReaderOption configures a Reader.
type ReaderOption func(*Reader)

// WithPath names the file in errors.
func WithPath(path string) ReaderOption { return func(r *Reader) { r.path = path } }

// anySeq, as WithStart's nextSeq, accepts whatever seq the first row holds
// (a salvage read restarting after damage).
const anySeq = math.MinInt64

// WithStart makes the Reader start at a row boundary instead of the header:
// the bytes read from the source begin at file offset offset (used in
// errors and offsets), and the first row must hold nextSeq (or any seq,
// when nextSeq is math.MinInt64). Header then returns the zero Header.
func WithStart(offset, nextSeq int64) ReaderOption {
	return func(r *Reader) {
		r.bufOff, r.end, r.next, r.hdrDone = offset, offset, nextSeq, true
	}
}

// WithFrom makes Next skip events with a seq below from; they are still
// decoded and checked.
func WithFrom(from int64) ReaderOption { return func(r *Reader) { r.from = from } }

// NewReader returns a Reader of src.
func NewReader(src io.Reader, opts ...ReaderOption) *Reader {
	r := &Reader{src: src, types: map[string]string{}, maxRow: MaxRowSize}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Header reads and returns the header row. Next calls it when needed.
func (r *Reader) Header() (Header, error) {
	if r.hdrDone {
		return r.hdr, r.err
	}
	r.hdrDone = true
	var line []byte
	if r.zs != nil {
		var err error
		if line, err = r.zstdHeader(); err != nil {
			return r.hdr, err
		}
	} else {
		var complete bool
		var err error
		line, _, complete, _, err = r.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			return r.hdr, r.fail(fmt.Errorf("eventlog: reading %s: %w", r.name(), err))
		}
		if errors.Is(err, io.EOF) || !complete {
			return r.hdr, r.fail(&CorruptError{Path: r.path, Offset: 0, Seq: -1, Reason: "no complete header row"})
		}
	}
	h, err := decodeHeader(line)
	if err != nil {
		var ce *CorruptError
		var ve *VersionError
		switch {
		case errors.As(err, &ce):
			ce.Path = r.path
		case errors.As(err, &ve):
			ve.Path = r.path
		}
		r.end = 0 // no good prefix without a header (zstd: past leading skippable frames)
		return r.hdr, r.fail(err)
	}
	r.hdr = h
	r.next = h.FirstSeq()
	if zs := r.zs; zs != nil {
		zs.endSeq = r.next
		if zs.cpos >= len(zs.content) {
			r.end = zs.frameEnd
		}
	} else {
		r.end = r.bufOff
	}
	return h, nil
}

// Next advances to the next event and reports whether there is one.
func (r *Reader) Next() bool {
	for {
		if r.curIdx < r.cur.n {
			k := r.curIdx
			r.curIdx++
			if k == 0 {
				r.curType = r.intern(r.cur.typ)
				r.slabbed = false
			}
			seq := r.cur.seq + int64(k)
			if seq < r.from {
				continue
			}
			d := r.cur.datas[k]
			if len(d) == 4 && string(d) == "null" {
				d = nil
			}
			r.ev = Event{Seq: seq, Type: r.curType, Time: r.cur.times[k], Data: d[:len(d):len(d)]}
			return true
		}
		if r.done {
			r.ev = Event{} // its Data may point at bytes read over since
			return false
		}
		if !r.hdrDone {
			if _, err := r.Header(); err != nil {
				return false
			}
		}
		r.readRow()
	}
}

// SkipRow reads and checks the next row without returning its events (and
// drops what is left of the current row). It reports whether a row was
// read; End and NextSeq advance past it. It ends the read as Next does.
func (r *Reader) SkipRow() bool {
	r.curIdx = r.cur.n
	if r.done {
		return false
	}
	if !r.hdrDone {
		if _, err := r.Header(); err != nil {
			return false
		}
	}
	r.readRow()
	r.curIdx = r.cur.n
	return !r.done
}

// readRow reads the next row into r.cur, or ends the read.
func (r *Reader) readRow() {
	if r.zs != nil {
		r.readZstdRow()
		return
	}
	line, off, complete, nul, err := r.readLine()
	switch {
	case errors.Is(err, io.EOF):
		r.done = true
		return
	case err != nil:
		r.fail(fmt.Errorf("eventlog: reading %s at offset %d: %w", r.name(), off, err))
		return
	case !complete:
		if r.overlong(off) {
			return
		}
		r.done = true
		r.torn = &TornTail{Offset: off, Bytes: int64(r.lastLen)}
		return
	}
	reason := ""
	if line == nil {
		reason = fmt.Sprintf("row exceeds the limit of %d bytes", r.maxRow)
	} else if err := decodeRow(line, &r.cur); err != nil {
		reason = err.Error()
	} else if r.next == anySeq {
		r.next = r.cur.seq
	} else if r.cur.seq != r.next {
		reason = fmt.Sprintf("seq %d where %d was expected", r.cur.seq, r.next)
	}
	if reason == "" {
		r.curIdx = 0
		r.next += int64(r.cur.n)
		r.end = off + int64(len(line)) + 1
		r.curLine, r.curOff = line, off
		return
	}
	r.cur.n, r.curIdx = 0, 0
	if line != nil {
		nul = bytes.IndexByte(line, 0) >= 0
	}
	if !nul {
		r.fail(&CorruptError{Path: r.path, Offset: off, Seq: r.next, Reason: reason})
		return
	}
	if r.overlong(off) {
		return
	}
	r.classifyNUL(off, int64(r.lastLen))
}

// overlong fails the read when the line readLine just returned (at off,
// in a tail that would otherwise be torn) holds more than MaxRowSize bytes
// without a NUL byte. A crash leaves in the tail a prefix of the last
// write: rows, each at most MaxRowSize bytes, with NUL holes where blocks
// were never written; a line holds no '\n', so a run of it without NULs
// lies inside one row. A longer run is not what a crash leaves but damage
// (docs/format.md §9), and a writer must not cut it as a torn tail.
func (r *Reader) overlong(off int64) bool {
	if r.lastRun <= int64(r.maxRow) {
		return false
	}
	r.fail(&CorruptError{Path: r.path, Offset: off, Seq: r.next, Reason: fmt.Sprintf(
		"a line of %d bytes holding %d without a NUL byte: longer than any row (%d bytes), so no crash left it",
		r.lastLen, r.lastRun, r.maxRow)})
	return true
}

// classifyNUL decides what a row holding NUL bytes at off is: torn when no
// valid row follows it, corruption otherwise.
func (r *Reader) classifyNUL(off, size int64) {
	var scratch row
	for {
		line, at, complete, _, err := r.readLine()
		if errors.Is(err, io.EOF) {
			r.done = true
			r.torn = &TornTail{Offset: off, Bytes: size}
			return
		}
		if err != nil {
			r.fail(fmt.Errorf("eventlog: reading %s at offset %d: %w", r.name(), at, err))
			return
		}
		size += int64(r.lastLen)
		if r.overlong(off) {
			return
		}
		if complete && line != nil && decodeRow(line, &scratch) == nil {
			r.fail(&CorruptError{Path: r.path, Offset: off, Seq: r.next,
				Reason: fmt.Sprintf("row holding NUL bytes followed by a valid row at offset %d", at)})
			return
		}
	}
}

func (r *Reader) intern(b []byte) string {
	if s, ok := r.types[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.types) < 1024 {
		r.types[s] = s
	}
	return s
}

func (r *Reader) fail(err error) error {
	r.done = true
	r.err = err
	return err
}

func (r *Reader) name() string {
	if r.path == "" {
		return "log"
	}
	return fmt.Sprintf("%q", r.path)
}

// rowSlab returns one buffer for the data of all the events of a packed
// row, so that its n events cost one allocation rather than n.
func rowSlab(datas [][]byte) []byte {
	total := 0
	for _, d := range datas {
		total += len(d)
	}
	return make([]byte, 0, total)
}

// takeData copies d to the free end of slab (a buffer from rowSlab) and
// returns the copy, capped at its length so that an append to it cannot
// reach the next event's data, and slab without it. Nil stays nil.
func takeData(slab, d []byte) (data, rest []byte) {
	if d == nil {
		return nil, slab
	}
	slab = append(slab, d...)
	n := len(slab)
	return slab[n-len(d) : n : n], slab[n:n:cap(slab)]
}

// Event returns the event Next advanced to. Its Data is the caller's: no
// other event's Data and nothing the Reader reuses share its bytes, and it
// is capped at its length, so that it may be changed or appended to. (The
// events of a packed row have their Data in one allocation, which lives
// as long as any of them is kept.) Each call returns a copy of its own.
func (r *Reader) Event() Event {
	e := r.ev
	if e.Data == nil {
		return e
	}
	if r.cur.n > 1 {
		if !r.slabbed {
			r.slab, r.slabbed = rowSlab(r.cur.datas[r.curIdx-1:]), true
		}
		e.Data, r.slab = takeData(r.slab, e.Data)
	} else {
		e.Data = cloneData(e.Data)
	}
	return e
}

// Borrow returns the event Next advanced to without copying its Data: the
// bytes are the Reader's, valid only until the next call of Next or
// SkipRow, and must not be changed (Data is capped at its length, so an
// append copies). A caller that keeps any of them past the next event
// copies them, or calls Event instead; one that only looks at each event
// in turn (a fold that copies what it keeps, a digest, a printer) saves a
// copy of every event's data.
func (r *Reader) Borrow() Event { return r.ev }

// DataOffset returns where the Data of the event Next advanced to lies in
// the source: the offset (as WithStart counts them) of its first byte, the
// bytes Borrow lends being those of the source, as they are. It is -1
// when they are not: a zstd log (its source holds compressed frames), data
// that is null, or no current event. A caller that keeps the offset
// instead of the bytes reads them again from the source's file.
func (r *Reader) DataOffset() int64 {
	if r.zs != nil || r.curIdx == 0 || r.curIdx > r.cur.n || r.ev.Data == nil {
		return -1
	}
	d, line := r.cur.datas[r.curIdx-1], r.curLine
	// d is a slice of line: its start is where their capacities differ.
	i := cap(line) - cap(d)
	if len(d) == 0 || i < 0 || i+len(d) > len(line) || &line[i] != &d[0] {
		return -1
	}
	return r.curOff + int64(i)
}

// Err returns the error that ended the read, or nil for a clean end or a
// torn tail.
func (r *Reader) Err() error { return r.err }

// Torn returns the torn tail the read ended on, or nil.
func (r *Reader) Torn() *TornTail { return r.torn }

// End returns the offset just past the last complete, valid row (raw) or
// frame (zstd) read so far: where a writer appends after cutting a torn
// tail.
func (r *Reader) End() int64 { return r.end }

// Resume returns a point a new Reader can start from with WithStart: the
// offset just past the last complete row (raw) or frame (zstd) read so far
// and the seq that follows it.
func (r *Reader) Resume() (offset, nextSeq int64) {
	if r.zs != nil {
		return r.end, r.zs.endSeq
	}
	return r.end, r.next
}

// NextSeq returns the seq the next row must hold.
func (r *Reader) NextSeq() int64 { return r.next }

// All returns the remaining events as an iterator. A read that ends in an
// error yields it last, with a zero Event.
func (r *Reader) All() iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for r.Next() {
			if !yield(r.Event(), nil) {
				return
			}
		}
		if r.err != nil {
			yield(Event{}, r.err)
		}
	}
}

// readLine returns the next line without its '\n', its offset, whether it
// ended in '\n' and whether it held a NUL byte — told for a line it
// returns as nil or incomplete only: the caller of a complete line looks
// for NULs only when the line is not a row (a row holds none: JSON has
// no raw control bytes), so a good row is not scanned for them. A line longer than
// MaxRowSize is consumed without being held and returned as nil (its length
// in r.lastLen). At the end of the source it returns io.EOF.
func (r *Reader) readLine() (line []byte, off int64, complete, nul bool, err error) {
	off = r.bufOff
	scanned := 0 // bytes of buf[r.r:] known to hold no '\n'
	var dropped int64
	var runs nulRuns // of a line longer than MaxRowSize only
	r.lastRun = 0
	for {
		if i := bytes.IndexByte(r.buf[r.r+scanned:r.w], '\n'); i >= 0 {
			n := scanned + i
			line = r.buf[r.r : r.r+n]
			r.consume(n + 1)
			r.lastLen = int(dropped) + n + 1
			if dropped > 0 {
				nul = runs.add(line) || nul
				r.lastRun = runs.longest
				line = nil
			}
			return line, off, true, nul, nil
		}
		scanned = r.w - r.r
		if scanned > r.maxRow {
			// Too long to be a row: drop what is buffered, remember NULs.
			nul = runs.add(r.buf[r.r:r.w]) || nul
			dropped += int64(scanned)
			r.consume(scanned)
			scanned = 0
		}
		if r.eof {
			n := r.w - r.r
			if n == 0 && dropped == 0 {
				return nil, off, false, false, io.EOF
			}
			line = r.buf[r.r:r.w]
			r.consume(n)
			r.lastLen = int(dropped) + n
			if dropped > 0 {
				nul = runs.add(line) || nul
				r.lastRun = runs.longest
				line = nil
			} else {
				nul = nul || bytes.IndexByte(line, 0) >= 0
			}
			return line, off, false, nul, nil
		}
		if err := r.fill(); err != nil {
			return nil, off, false, false, err
		}
	}
}

// nulRuns measures the runs of bytes without a NUL of a line fed to it
// piece by piece.
type nulRuns struct {
	cur, longest int64
}

// add feeds the next piece of the line and reports whether it holds a NUL.
func (s *nulRuns) add(b []byte) (nul bool) {
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			s.cur += int64(len(b))
			s.longest = max(s.longest, s.cur)
			return nul
		}
		s.longest = max(s.longest, s.cur+int64(i))
		s.cur, b, nul = 0, b[i+1:], true
	}
}

func (r *Reader) consume(n int) {
	r.r += n
	r.bufOff += int64(n)
}

// fill reads more bytes from the source, keeping buf[r:w].
func (r *Reader) fill() error {
	if r.r > 0 && r.r == r.w {
		r.r, r.w = 0, 0
	}
	if len(r.buf)-r.w < readChunk {
		unread := r.w - r.r
		size := len(r.buf)
		if unread+readChunk > size {
			size = max(2*size, unread+readChunk, readChunk)
		}
		if size != len(r.buf) {
			nb := make([]byte, size)
			copy(nb, r.buf[r.r:r.w])
			r.buf = nb
		} else {
			copy(r.buf, r.buf[r.r:r.w])
		}
		r.r, r.w = 0, unread
	}
	n, err := r.src.Read(r.buf[r.w:])
	r.w += n
	if errors.Is(err, io.EOF) {
		r.eof = true
		return nil
	}
	return err
}
