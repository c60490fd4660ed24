package seal

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Head is the start of a sealed file, read without a key: its clear
// header and the key records before its first sealed record (a key's
// records precede the rows it seals, so these open the header row).
type Head struct {
	Encoding  Encoding
	Clear     ClearHeader
	Envelopes []Envelope
	// End is the offset of the first sealed record: the header row's.
	End int64
}

// maxHead bounds what ReadHead reads: a clear header and key records for
// a few thousand recipients.
const maxHead = 4 << 20

// sniffSize is how much of a file ReadHead reads to tell a sealed one.
const sniffSize = 64

// ReadHead reads the head of the file in src (size bytes long). sealed is
// false, and nothing else is read, when the file does not start a sealed
// log (a clear log). Damage of the head is a *eventlog.CorruptError.
func ReadHead(src io.ReaderAt, size int64, path string) (h Head, sealed bool, err error) {
	b := make([]byte, min(size, sniffSize))
	if n, err := src.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return h, false, fmt.Errorf("seal: reading %q: %w", path, err)
	}
	enc, ok := IsSealed(b)
	if !ok {
		return h, false, nil
	}
	h.Encoding = enc
	rr := newRecordReader(io.NewSectionReader(src, 0, min(size, maxHead)), enc, 0)
	rec, fe, err := rr.next(true)
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		return h, true, fmt.Errorf("seal: reading %q: %w", path, err)
	case err != nil || fe != nil:
		return h, true, &eventlog.CorruptError{Path: path, Offset: 0, Seq: -1, Reason: "no complete sealed header"}
	}
	if h.Clear, err = decodeClearHeader(rec.clear); err != nil {
		var ce *eventlog.CorruptError
		var ve *eventlog.VersionError
		if errors.As(err, &ce) {
			ce.Path = path
		} else if errors.As(err, &ve) {
			ve.Path = path
		}
		return h, true, err
	}
	for {
		rec, fe, err := rr.next(false)
		switch {
		case errors.Is(err, io.EOF):
			return h, true, &eventlog.CorruptError{Path: path, Offset: rr.off, Seq: -1, Reason: "no sealed header row after the key records"}
		case err != nil:
			return h, true, fmt.Errorf("seal: reading %q at offset %d: %w", path, rr.off, err)
		case fe != nil:
			return h, true, &eventlog.CorruptError{Path: path, Offset: fe.off, Seq: -1, Reason: fe.reason + ", before the sealed header row"}
		}
		switch rec.kind {
		case recKey:
			rec.env.Offset, rec.env.Len = rec.off, rec.n
			h.Envelopes = append(h.Envelopes, rec.env)
		case recData:
			h.End = rec.off
			return h, true, nil
		default:
			return h, true, &eventlog.CorruptError{Path: path, Offset: rec.off, Seq: -1, Reason: "a record that is no key record before the sealed header row"}
		}
	}
}

// Fingerprint names the file the head was read from among the files of
// its session: the sha256 of the session ID and of its first key record.
// Two files with the same fingerprint hold the same data keys (a file
// rewritten, into its layout or the other, keeps its key records in
// their order; a session deleted and created again, or shredded, has
// other ones).
func (h Head) Fingerprint() [32]byte {
	d := sha256.New()
	d.Write([]byte(h.Clear.ID))
	if len(h.Envelopes) > 0 {
		e := h.Envelopes[0]
		var b [5]byte
		b[0] = 'k'
		if e.Shredded {
			b[0] = 's'
		}
		b[1], b[2], b[3], b[4] = byte(e.Key>>24), byte(e.Key>>16), byte(e.Key>>8), byte(e.Key)
		d.Write(b[:])
		d.Write(e.Age)
	}
	var out [32]byte
	d.Sum(out[:0])
	return out
}

// ReadEnvelope reads the key record that stands at off, n bytes long (as
// an Envelope locates it), in a file of layout enc.
func ReadEnvelope(src io.ReaderAt, enc Encoding, off, n int64, path string) (Envelope, error) {
	if n <= 0 || n > maxRecord+maxFrameRecord {
		return Envelope{}, &eventlog.CorruptError{Path: path, Offset: off, Seq: -1, Reason: "no key record there"}
	}
	b := make([]byte, n)
	if _, err := src.ReadAt(b, off); err != nil {
		return Envelope{}, fmt.Errorf("seal: reading %q at offset %d: %w", path, off, err)
	}
	var rec record
	ok := false
	if enc == Zstd {
		if len(b) >= 8 && int64(binary.LittleEndian.Uint32(b[4:])) == n-8 {
			rec, ok = parseFrame(binary.LittleEndian.Uint32(b), b[8:], false)
		}
	} else {
		var rr recordReader
		rec, ok = rr.parseLine(b, false)
	}
	if !ok || rec.kind != recKey {
		return Envelope{}, &eventlog.CorruptError{Path: path, Offset: off, Seq: -1, Reason: "no key record there"}
	}
	rec.env.Offset, rec.env.Len = off, n
	return rec.env, nil
}

// NextRecord returns where reading a sealed file of layout enc can
// restart after damage at off (a salvage): past the next '\n' (raw), or
// at the next magic of a sealed or key record (zstd); false when there
// is none before size.
func NextRecord(src io.ReaderAt, size, off int64, enc Encoding) (int64, bool, error) {
	buf := make([]byte, 64<<10)
	for pos := off + 1; pos < size; {
		n, err := src.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
		b := buf[:n]
		if enc == Raw {
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				return pos + int64(i) + 1, pos+int64(i)+1 < size, nil
			}
			pos += int64(n)
			continue
		}
		for i := 0; i+4 <= len(b); i++ {
			if m := binary.LittleEndian.Uint32(b[i:]); m == magicSealed || m == magicKey {
				return pos + int64(i), true, nil
			}
		}
		pos += int64(max(n-3, 1))
	}
	return 0, false, nil
}
