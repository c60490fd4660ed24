package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Damage is reported, never fatal to what precedes it. A JSONL trace
// whose line N cannot be read (or converted) is imported up to line N-1,
// the session marked Partial with the line's error; with SkipBad the
// import goes on past every such line, each one reported in Skipped (a
// bad line is no record: it is left out, and the session keeps every
// other). A last line without a newline that is not JSON is a torn tail —
// what a writer cut off mid-line leaves — left out and reported as Torn.
// A file whose first record is bad is not of the format: it is refused
// whole. A line longer than the limit (Config.Limit) is bad as soon as
// the limit is crossed: the rest of it is never held in memory.

// RecordError is a source record (a line) that cannot be imported. It
// wraps the reason; errors.Is(err, ErrFormat) holds.
type RecordError struct {
	Path string // the file, when known
	Line int    // from 1
	Err  error
}

func (e *RecordError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s: line %d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

// Unwrap returns the reason.
func (e *RecordError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFormat) hold.
func (e *RecordError) Is(target error) bool { return target == ErrFormat }

// Torn is a torn last line: its number, offset and length in bytes.
type Torn struct {
	Line   int
	Offset int64
	Bytes  int64
}

// SkipBad makes a conversion go past bad lines, each reported in
// Session.Skipped, instead of stopping before the first.
func SkipBad() Option { return func(c *Config) { c.SkipBad = true } }

// MaxLine sets the longest line (record) a conversion reads, in bytes;
// the default is eventlog.MaxRowSize. For tests.
func MaxLine(n int) Option { return func(c *Config) { c.MaxLine = n } }

// lineReader reads the lines of a JSONL source one at a time, holding at
// most one line (up to the limit) in memory.
type lineReader struct {
	br    *bufio.Reader
	limit int
	buf   []byte
	n     int   // number of the line read last, from 1
	off   int64 // offset of the next line
	// inLine: next refused a line without reading its end (see skip)
	inLine bool
}

func newLineReader(r io.Reader, limit int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), limit: limit}
}

// errLong is returned by next for a line over the limit: the line's
// bytes read so far are not returned.
var errLong = errors.New("line too long")

// next reads the next line: its bytes with the end of line, and whether
// it ended with a newline. At the end of the source it returns io.EOF
// (with no bytes). A line over the limit returns errLong as soon as the
// limit is crossed, the reader left inside the line (see skip).
func (l *lineReader) next() (line []byte, nl bool, err error) {
	l.buf = l.buf[:0]
	l.n++
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(l.buf)+len(chunk) > l.limit+2 { // the line, \r and \n
			l.off += int64(len(l.buf) + len(chunk))
			l.inLine = err != nil // the chunk did not end the line
			return nil, false, errLong
		}
		l.grow(len(chunk))
		l.buf = append(l.buf, chunk...)
		switch {
		case err == nil:
			l.off += int64(len(l.buf))
			return l.buf, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			l.off += int64(len(l.buf))
			if len(l.buf) == 0 {
				return nil, false, io.EOF
			}
			return l.buf, false, nil
		default:
			return nil, false, err
		}
	}
}

// grow makes room in buf for n more bytes: doubling, so that a long line
// costs few copies, and never past what a line may hold (append's own
// growth, a quarter at a time for large slices, leaves several times a
// long line's size behind it for the collector).
func (l *lineReader) grow(n int) {
	if cap(l.buf)-len(l.buf) >= n {
		return
	}
	c := min(max(2*cap(l.buf), len(l.buf)+n, 64<<10), l.limit+2)
	nb := make([]byte, len(l.buf), c)
	copy(nb, l.buf)
	l.buf = nb
}

// skip reads past the rest of a line next refused as too long, without
// holding it, and returns how many bytes it skipped.
func (l *lineReader) skip() (int64, error) {
	var n int64
	if !l.inLine {
		return 0, nil
	}
	l.inLine = false
	for {
		chunk, err := l.br.ReadSlice('\n')
		n += int64(len(chunk))
		switch {
		case err == nil:
			l.off += n
			return n, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			l.off += n
			return n, nil
		default:
			return n, err
		}
	}
}

// trimEOL returns line without its newline and one carriage return.
func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// Lines reads r's lines and calls fn with each non-blank one (without its
// end of line) and its number, from 1, each a record: Lines calls Record
// before fn, and fn ends it with Keep. The record's events go to Emit once
// fn returns. A line fn fails on, or whose events the log would refuse,
// is a bad record: its events are dropped, and the conversion stops
// before it (Session.Partial) or, with SkipBad, goes past it
// (Session.Skipped); a bad first record makes Lines return its
// *RecordError: the source is not of the format. fn may have changed
// the converter's own state before its record turned out bad: the
// converter puts it back as the record found it (Undo). A torn last line (see
// Torn) is not passed to fn. Lines returns the error of Emit, of reading
// r, or ctx's, which stop it at once.
func (b *Builder) Lines(ctx context.Context, r io.Reader, fn func(n int, line []byte) error) error {
	lr := newLineReader(r, b.cfg.Limit())
	for {
		if lr.n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		start := lr.off
		raw, nl, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, errLong):
			re := &RecordError{Line: lr.n, Err: errTooLong(b.cfg.Limit())}
			if stop, err := b.badRecord(re); stop || err != nil {
				return err
			}
			if _, err := lr.skip(); err != nil { // a skipped line is not part of the session
				return err
			}
			continue
		case err != nil:
			return err
		}
		line := trimEOL(raw)
		if len(bytes.TrimSpace(line)) == 0 {
			b.Read(raw)
			continue
		}
		if !nl && !json.Valid(line) {
			b.torn = &Torn{Line: lr.n, Offset: start, Bytes: int64(len(raw))}
			return nil
		}
		b.Record(lr.n, line)
		err = fn(lr.n, line)
		if err == nil {
			err = b.err
		}
		if err == nil && b.open() {
			err = fmt.Errorf("importer: line %d: the converter did not end its record", lr.n)
		}
		if err != nil {
			b.Drop()
			if stop, err := b.badRecord(&RecordError{Line: lr.n, Err: err}); stop || err != nil {
				return err
			}
			continue
		}
		b.Read(raw)
		if err := b.Flush(); err != nil {
			return err
		}
	}
}

// badRecord takes a bad record: the source is refused when it is the first
// (err), the conversion stops before it (stop) or, with SkipBad, goes on.
func (b *Builder) badRecord(re *RecordError) (stop bool, err error) {
	if b.records == 0 && len(b.skips) == 0 && b.next == 0 {
		return true, re
	}
	if b.cfg.SkipBad {
		b.skips = append(b.skips, re)
		return false, nil
	}
	b.bad = re
	return true, nil
}

// LineRecords calls fn with the records of a JSONL source: each line
// that is not blank, compacted as the log stores data (a line that is not
// JSON is given as it is), but a torn last line (see Lines). These are
// what an import of a JSONL format keeps. A line over limit bytes is an
// error.
func LineRecords(r io.Reader, limit int, fn func(json.RawMessage) error) error {
	lr := newLineReader(r, limit)
	for {
		raw, nl, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, errLong):
			return &RecordError{Line: lr.n, Err: errTooLong(limit)}
		case err != nil:
			return err
		}
		line := trimEOL(raw)
		if len(bytes.TrimSpace(line)) == 0 || (!nl && !json.Valid(line)) {
			continue
		}
		if c, err := Marshal(json.RawMessage(line)); err == nil {
			line = c
		}
		if err := fn(bytes.Clone(line)); err != nil {
			return err
		}
	}
}
