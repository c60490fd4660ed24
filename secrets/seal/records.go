package seal

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The records of a sealed file, by their framing alone: what can be
// checked without a key.

type recKind int

const (
	recData   recKind = iota // a sealed row or frame
	recKey                   // a key record (shredded or not)
	recSkip                  // a skippable frame of another use (zstd: the tail frame)
	recHeader                // the clear header
)

// record is one record as framed in the file.
type record struct {
	kind   recKind
	off, n int64 // where it stands; n without a raw line's '\n'
	end    int64 // the offset past it ('\n' included)
	key    uint32
	sealed []byte // a data record's nonce, ciphertext and tag
	env    Envelope
	clear  []byte // the clear header's JSON
}

// frameErr is a record whose framing is bad: where, and why.
type frameErr struct {
	off    int64
	n      int64 // bytes it spans, as far as known
	reason string
	nul    bool // a raw line holding NUL bytes
	cut    bool // the file ends inside it
}

// recordReader reads the records of a sealed file from an io.Reader.
type recordReader struct {
	src io.Reader
	enc Encoding

	buf  []byte
	r, w int
	off  int64 // file offset of buf[r]
	eof  bool

	b64 []byte // decoded base64, reused
}

const readChunk = 64 << 10

func newRecordReader(src io.Reader, enc Encoding, off int64) *recordReader {
	return &recordReader{src: src, enc: enc, off: off}
}

// fill reads more of the source, keeping buf[r:w].
func (rr *recordReader) fill() error {
	if rr.eof {
		return nil
	}
	if rr.r > 0 {
		copy(rr.buf, rr.buf[rr.r:rr.w])
		rr.w -= rr.r
		rr.r = 0
	}
	if len(rr.buf)-rr.w < readChunk {
		nb := make([]byte, max(2*len(rr.buf), rr.w+readChunk))
		copy(nb, rr.buf[:rr.w])
		rr.buf = nb
	}
	n, err := rr.src.Read(rr.buf[rr.w:])
	rr.w += n
	if errors.Is(err, io.EOF) {
		rr.eof = true
		return nil
	}
	return err
}

// ensure buffers n bytes, or all that is left.
func (rr *recordReader) ensure(n int) error {
	for rr.w-rr.r < n && !rr.eof {
		if err := rr.fill(); err != nil {
			return err
		}
	}
	return nil
}

// unread steps back over the last n bytes consumed, which must still be
// buffered (no fill since).
func (rr *recordReader) unread(n int64) {
	rr.r -= int(n)
	rr.off -= n
}

func (rr *recordReader) consume(n int) {
	rr.r += n
	rr.off += int64(n)
}

// next returns the next record. At the end of the file it returns
// io.EOF; a record whose framing is bad is returned as fe (the reader
// then stands just past what it spans, or at the end).
func (rr *recordReader) next(first bool) (rec record, fe *frameErr, err error) {
	if rr.enc == Zstd {
		return rr.nextFrame(first)
	}
	return rr.nextLine(first)
}

func (rr *recordReader) nextLine(first bool) (record, *frameErr, error) {
	off := rr.off
	scanned := 0
	for {
		if i := bytes.IndexByte(rr.buf[rr.r+scanned:rr.w], '\n'); i >= 0 {
			line := rr.buf[rr.r : rr.r+scanned+i]
			rec, ok := rr.parseLine(line, first)
			rec.off, rec.n, rec.end = off, int64(len(line)), off+int64(len(line))+1
			rr.consume(len(line) + 1)
			if !ok {
				return rec, &frameErr{off: off, n: rec.end - off, reason: "a line that is no sealed record", nul: bytes.IndexByte(line, 0) >= 0}, nil
			}
			return rec, nil, nil
		}
		scanned = rr.w - rr.r
		if scanned > maxRecord {
			n := rr.skipLine()
			return record{}, &frameErr{off: off, n: n, reason: "a line longer than any sealed record"}, nil
		}
		if rr.eof {
			if scanned == 0 {
				return record{}, nil, io.EOF
			}
			rr.consume(scanned)
			return record{}, &frameErr{off: off, n: int64(scanned), reason: "a record cut short", cut: true}, nil
		}
		if err := rr.fill(); err != nil {
			return record{}, nil, err
		}
	}
}

// skipLine consumes the rest of a line too long to be a record, and
// returns its length.
func (rr *recordReader) skipLine() int64 {
	var n int64
	for {
		if i := bytes.IndexByte(rr.buf[rr.r:rr.w], '\n'); i >= 0 {
			rr.consume(i + 1)
			return n + int64(i) + 1
		}
		n += int64(rr.w - rr.r)
		rr.consume(rr.w - rr.r)
		if rr.eof || rr.fill() != nil {
			return n
		}
	}
}

// parseLine parses a raw record exactly: the clear header (first),
// {"k":K,"s":"…"}, {"key":K,"age":"…"} or {"key":K,"shred":"0…0"}, with
// nothing else in it.
func (rr *recordReader) parseLine(line []byte, first bool) (record, bool) {
	if first {
		return record{kind: recHeader, clear: line}, true
	}
	var rec record
	switch {
	case bytes.HasPrefix(line, []byte(`{"k":`)):
		k, rest, ok := parseUint32(line[len(`{"k":`):])
		if !ok || len(rest) < len(`,"s":""}`) || !bytes.HasPrefix(rest, []byte(`,"s":"`)) || !bytes.HasSuffix(rest, []byte(`"}`)) {
			return rec, false
		}
		b, ok := rr.base64(rest[len(`,"s":"`) : len(rest)-2])
		if !ok || len(b) < nonceSize+tagSize {
			return rec, false
		}
		return record{kind: recData, key: k, sealed: b}, true
	case bytes.HasPrefix(line, []byte(`{"key":`)):
		k, rest, ok := parseUint32(line[len(`{"key":`):])
		if !ok || !bytes.HasSuffix(rest, []byte(`"}`)) {
			return rec, false
		}
		switch {
		case len(rest) < len(`,"age":""}`):
		case bytes.HasPrefix(rest, []byte(`,"age":"`)):
			b, ok := rr.base64(rest[len(`,"age":"`) : len(rest)-2])
			if !ok {
				return rec, false
			}
			return record{kind: recKey, key: k, env: Envelope{Key: k, Age: bytes.Clone(b)}}, true
		case len(rest) >= len(`,"shred":""}`) && bytes.HasPrefix(rest, []byte(`,"shred":"`)):
			z := rest[len(`,"shred":"`) : len(rest)-2]
			if len(bytes.Trim(z, "0")) != 0 {
				return rec, false
			}
			return record{kind: recKey, key: k, env: Envelope{Key: k, Shredded: true}}, true
		}
	}
	return rec, false
}

// base64 decodes strict standard base64 (no stray bits in the padding,
// so that every byte of a record counts).
func (rr *recordReader) base64(b []byte) ([]byte, bool) {
	n := base64.StdEncoding.DecodedLen(len(b))
	if cap(rr.b64) < n {
		rr.b64 = make([]byte, n)
	}
	m, err := base64.StdEncoding.Strict().Decode(rr.b64[:n], b)
	return rr.b64[:m], err == nil
}

// parseUint32 parses a decimal without leading zeros.
func parseUint32(b []byte) (uint32, []byte, bool) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 || i > 10 || (i > 1 && b[0] == '0') {
		return 0, nil, false
	}
	v, err := strconv.ParseUint(string(b[:i]), 10, 32)
	return uint32(v), b[i:], err == nil
}

func (rr *recordReader) nextFrame(first bool) (record, *frameErr, error) {
	off := rr.off
	if err := rr.ensure(8); err != nil {
		return record{}, nil, err
	}
	avail := rr.w - rr.r
	if avail == 0 {
		return record{}, nil, io.EOF
	}
	if avail < 8 {
		rr.consume(avail)
		return record{}, &frameErr{off: off, n: int64(avail), reason: "a frame cut short", cut: true}, nil
	}
	b := rr.buf[rr.r:rr.w]
	magic := binary.LittleEndian.Uint32(b)
	size := int64(binary.LittleEndian.Uint32(b[4:]))
	if magic&0xFFFFFFF0 != 0x184D2A50 {
		rr.consume(1)
		return record{}, &frameErr{off: off, n: 1, reason: fmt.Sprintf("bytes that are no sealed frame (magic %#08x)", magic)}, nil
	}
	if size > maxFrameRecord {
		rr.consume(1)
		return record{}, &frameErr{off: off, n: 1, reason: fmt.Sprintf("a frame of %d bytes, more than any sealed frame", size)}, nil
	}
	if err := rr.ensure(int(8 + size)); err != nil {
		return record{}, nil, err
	}
	if int64(rr.w-rr.r) < 8+size {
		n := rr.w - rr.r
		rr.consume(1) // what follows is searched for a valid frame
		return record{}, &frameErr{off: off, n: int64(n), reason: "a frame that runs past the end of the file", cut: true}, nil
	}
	p := rr.buf[rr.r+8 : rr.r+8+int(size)]
	rec, ok := parseFrame(magic, p, first)
	rec.off, rec.n, rec.end = off, 8+size, off+8+size
	if !ok {
		rr.consume(1)
		return rec, &frameErr{off: off, n: 8 + size, reason: "a sealed frame with a bad payload"}, nil
	}
	rr.consume(int(8 + size))
	return rec, nil, nil
}

// parseFrame parses a zstd-layout record's payload.
func parseFrame(magic uint32, p []byte, first bool) (record, bool) {
	switch {
	case first:
		return record{kind: recHeader, clear: bytes.Clone(p)}, magic == magicHeader
	case magic == magicSealed:
		if len(p) < 4+nonceSize+tagSize {
			return record{}, false
		}
		return record{kind: recData, key: binary.BigEndian.Uint32(p), sealed: p[4:]}, true
	case magic == magicKey:
		if len(p) < 5 || (p[0] != 'k' && p[0] != 's') {
			return record{}, false
		}
		k := binary.BigEndian.Uint32(p[1:])
		if p[0] == 's' {
			return record{kind: recKey, key: k, env: Envelope{Key: k, Shredded: true}}, true
		}
		return record{kind: recKey, key: k, env: Envelope{Key: k, Age: bytes.Clone(p[5:])}}, true
	case magic == magicHeader:
		return record{}, false // a second header
	case magic == 0x184D2A5E:
		return record{kind: recSkip}, len(p) == 40 // the tail frame
	}
	// The layout is ours alone: another skippable frame is a damaged
	// magic (one bit turns a sealed frame's into one), never skipped.
	return record{}, false
}

// validAhead reads on from a bad record for one that is valid (valid
// decides, for a well-framed data record, whether it opens), and reports
// whether there is one; it consumes the input. A raw reader resumes at
// the next line, a zstd one at the next byte that starts a sealed magic.
func (rr *recordReader) validAhead(valid func(record) bool) (bool, error) {
	for {
		if rr.enc == Zstd {
			if err := rr.seekMagic(); err != nil || rr.w == rr.r {
				return false, err
			}
		}
		rec, fe, err := rr.next(false)
		switch {
		case errors.Is(err, io.EOF):
			return false, nil
		case err != nil:
			return false, err
		case fe == nil && (rec.kind != recData || valid(rec)):
			return true, nil
		}
	}
}

// seekMagic consumes bytes up to the next one that starts the magic of a
// sealed header, key, sealed or tail frame, or to the end.
func (rr *recordReader) seekMagic() error {
	for {
		b := rr.buf[rr.r:rr.w]
		for i := 0; i+4 <= len(b); i++ {
			if m := binary.LittleEndian.Uint32(b[i:]); m >= magicHeader && m <= 0x184D2A5E {
				rr.consume(i)
				return nil
			}
		}
		if rr.eof {
			rr.consume(len(b))
			return nil
		}
		if len(b) > 3 {
			rr.consume(len(b) - 3)
		}
		if err := rr.fill(); err != nil {
			return err
		}
	}
}

// rest consumes the rest of the input and returns how many bytes it was.
func (rr *recordReader) rest() (int64, error) {
	var n int64
	for {
		n += int64(rr.w - rr.r)
		rr.consume(rr.w - rr.r)
		if rr.eof {
			return n, nil
		}
		if err := rr.fill(); err != nil {
			return n, err
		}
	}
}
