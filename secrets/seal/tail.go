package seal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
)

// Tail is what ReadTail finds of a sealed log.
type Tail struct {
	Header eventlog.Header
	Last   eventlog.Event
	Found  bool // false when the log holds no row
	// HeaderEnd is the offset just past the sealed header row's record;
	// End just past the last record that opens (HeaderEnd when none).
	HeaderEnd, End int64
	// LastFrame is the offset and length of the frame holding the last
	// event, and LastContent its rows, opened and decoded (zstd only).
	LastFrame   [2]int64
	LastContent []byte
}

// ReadTail reads a sealed log's header row and last event, a bounded
// amount as logfile.ReadTail does for a clear log: the records at the
// start up to the sealed header row, and the last record that opens
// (raw: found backward from the end, passing over a torn tail; zstd:
// through a tail frame at the end, else by walking the frame headers).
// It checks nothing in between: Reader does. The last record's key must
// be in kr (its envelope may stand anywhere: a key rotated to later has
// its envelope in the middle; then a full read finds it).
func ReadTail(src io.ReaderAt, size int64, enc Encoding, kr *Keyring, opts ...Option) (Tail, error) {
	var c readerConfig
	for _, o := range opts {
		o(&c)
	}
	var t Tail
	// The head: clear header, key records, the sealed header row.
	r := NewReader(io.NewSectionReader(src, 0, size), enc, kr, opts...)
	h, err := r.Header()
	if err != nil {
		return t, err
	}
	t.Header = h
	headEnd := r.p.spans[0].fileEnd
	t.HeaderEnd, t.End = headEnd, headEnd
	var last []byte
	var at [2]int64 // the last record: offset, length
	if enc == Zstd {
		last, at, err = lastFrame(src, size, headEnd, kr, r.p, c)
	} else {
		last, at, err = lastLine(src, size, headEnd, kr, r.p)
	}
	if err != nil || last == nil {
		return t, err
	}
	t.End = at[0] + at[1]
	if enc == Zstd {
		content, err := c.codec.DecodeFrame(last, nil)
		if err != nil || len(content) == 0 || content[len(content)-1] != '\n' {
			return t, &eventlog.CorruptError{Path: c.path, Offset: at[0], Seq: -1, Reason: "the last sealed frame does not decode"}
		}
		t.LastFrame, t.LastContent = at, content
		t.Last, t.Found, err = logfile.LastEvent(bytes.NewReader(content), int64(len(content)), 0)
		return t, err
	}
	t.End++ // the line's '\n'

	evs, err := eventlog.DecodeRow(last)
	if err != nil {
		return t, &eventlog.CorruptError{Path: c.path, Offset: -1, Seq: -1, Reason: "the last sealed row: " + err.Error()}
	}
	t.Last, t.Found = evs[len(evs)-1], true
	return t, nil
}

// lastLine returns the plaintext of the last raw record after headEnd
// that opens and where the record stands (without its '\n'), or nil when
// there is none.
func lastLine(src io.ReaderAt, size, headEnd int64, kr *Keyring, p *plainSource) ([]byte, [2]int64, error) {
	end := size
	window := int64(64 << 10)
	for end > headEnd {
		start := max(headEnd, end-window)
		buf := make([]byte, end-start)
		if _, err := src.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, [2]int64{}, fmt.Errorf("seal: reading the tail at offset %d: %w", start, err)
		}
		b := buf
		if nl := bytes.LastIndexByte(b, '\n'); nl >= 0 {
			b = b[:nl]
		} else if start > headEnd {
			window *= 2
			continue
		} else {
			return nil, [2]int64{}, nil
		}
		for {
			prev := bytes.LastIndexByte(b, '\n')
			if prev < 0 && start > headEnd {
				break // the line starts before the window
			}
			rr := recordReader{}
			if rec, ok := rr.parseLine(b[prev+1:], false); ok && rec.kind == recData {
				if plain, err := p.open(rec); err == nil {
					return bytes.Clone(plain), [2]int64{start + int64(prev+1), int64(len(b) - prev - 1)}, nil
				} else if errors.Is(err, ErrNoKey) {
					return nil, [2]int64{}, err
				}
			}
			if prev < 0 {
				return nil, [2]int64{}, nil
			}
			b = b[:prev]
		}
		if int64(len(b)) > maxRecord {
			end = start
			continue
		}
		end = start + int64(len(b)) + 1
		window = 2 * max(window, int64(len(b))+1)
	}
	return nil, [2]int64{}, nil
}

// lastFrame returns the plaintext (a zstd frame) of the last sealed
// frame after headEnd that opens and where the sealed frame stands, or
// nil.
func lastFrame(src io.ReaderAt, size, headEnd int64, kr *Keyring, p *plainSource, c readerConfig) ([]byte, [2]int64, error) {
	var offs [][2]int64
	// A tail frame at the end names the last frame.
	if size-headEnd >= 48 {
		var tb [48]byte
		if _, err := src.ReadAt(tb[:], size-48); err == nil &&
			binary.LittleEndian.Uint32(tb[:]) == 0x184D2A5E && binary.LittleEndian.Uint32(tb[4:]) == 40 &&
			int64(binary.LittleEndian.Uint64(tb[16:])) == size-48 {
			off, n := int64(binary.LittleEndian.Uint64(tb[24:])), int64(binary.LittleEndian.Uint64(tb[32:]))
			if off >= headEnd && n > 0 && off+n <= size-48 {
				offs = append(offs, [2]int64{off, n})
			}
		}
	}
	if offs == nil {
		var hb [8]byte
		for off := headEnd; off+8 <= size; {
			if _, err := src.ReadAt(hb[:], off); err != nil {
				break
			}
			n := 8 + int64(binary.LittleEndian.Uint32(hb[4:]))
			if binary.LittleEndian.Uint32(hb[:])&0xFFFFFFF0 != 0x184D2A50 || off+n > size {
				break // a torn tail, or damage: the reader's to judge
			}
			if binary.LittleEndian.Uint32(hb[:]) == magicSealed {
				offs = append(offs, [2]int64{off, n})
			}
			off += n
		}
	}
	for i := len(offs) - 1; i >= 0; i-- {
		buf := make([]byte, offs[i][1])
		if _, err := src.ReadAt(buf, offs[i][0]); err != nil {
			return nil, [2]int64{}, fmt.Errorf("seal: reading %q at offset %d: %w", c.path, offs[i][0], err)
		}
		rec, ok := parseFrame(magicSealed, buf[8:], false)
		if !ok {
			continue
		}
		plain, err := p.open(rec)
		if errors.Is(err, ErrNoKey) {
			return nil, [2]int64{}, err
		}
		if err == nil {
			return bytes.Clone(plain), offs[i], nil
		}
	}
	return nil, [2]int64{}, nil
}
