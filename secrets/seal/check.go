package seal

import (
	"errors"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Framing is what a sealed file shows without a key: its clear header,
// its records and envelopes, and where its framing ends.
type Framing struct {
	Header ClearHeader
	// Records counts the sealed rows (raw) or frames (zstd), the header
	// row's included.
	Records   int
	Envelopes []Envelope
	// Torn is a tail whose framing is cut short (or holds NUL bytes), or
	// nil. Without a key, a record that fails authentication cannot be
	// told from a good one: Check does not look inside records.
	Torn *eventlog.TornTail
	// End is the offset past the last well-framed record.
	End int64
}

// Check reads a sealed file's framing: the clear header and every
// record's frame, without opening any. It is what verify can check
// without an identity, and how a reader finds every envelope of a file
// before reading it (a recipient added later has its envelope after the
// rows it opens). Damage of the framing is a *eventlog.CorruptError as in
// a clear log of the same encoding (docs/format.md §9).
func Check(src io.Reader, enc Encoding, path string) (Framing, error) {
	var f Framing
	rr := newRecordReader(src, enc, 0)
	rec, fe, err := rr.next(true)
	if err != nil && !errors.Is(err, io.EOF) {
		return f, fmt.Errorf("seal: reading %q: %w", path, err)
	}
	if err != nil || fe != nil {
		return f, &eventlog.CorruptError{Path: path, Offset: 0, Seq: -1, Reason: "no complete sealed header"}
	}
	if f.Header, err = decodeClearHeader(rec.clear); err != nil {
		var ce *eventlog.CorruptError
		if errors.As(err, &ce) {
			ce.Path = path
		}
		return f, err
	}
	f.End = rec.end
	for {
		rec, fe, err := rr.next(false)
		switch {
		case errors.Is(err, io.EOF):
			return f, nil
		case err != nil:
			return f, fmt.Errorf("seal: reading %q at offset %d: %w", path, rr.off, err)
		case fe == nil && rec.kind == recHeader:
			fe = &frameErr{off: rec.off, reason: "a second sealed header"}
		}
		if fe != nil {
			found, err := rr.validAhead(func(record) bool { return true })
			if err != nil {
				return f, fmt.Errorf("seal: reading %q after offset %d: %w", path, fe.off, err)
			}
			if found || !(fe.nul || fe.cut || enc == Zstd) {
				reason := fe.reason
				if found {
					reason += ", followed by a well-framed record"
				}
				return f, &eventlog.CorruptError{Path: path, Offset: fe.off, Seq: -1, Reason: reason}
			}
			if _, err := rr.rest(); err != nil {
				return f, fmt.Errorf("seal: reading %q: %w", path, err)
			}
			f.Torn = &eventlog.TornTail{Offset: fe.off, Bytes: rr.off - fe.off}
			return f, nil
		}
		switch rec.kind {
		case recData:
			f.Records++
		case recKey:
			rec.env.Offset, rec.env.Len = rec.off, rec.n
			f.Envelopes = append(f.Envelopes, rec.env)
		}
		f.End = rec.end
	}
}
