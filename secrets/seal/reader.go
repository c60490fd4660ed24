package seal

import (
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Reader reads a sealed log: it opens each record with the keyring and
// hands the plaintext — a raw log, the header row first — to an
// eventlog.Reader, which checks every row as it checks a clear log. It
// has the eventlog.Reader's methods, with offsets in the sealed file.
//
// A read ends as a clear read does (docs/format.md §9, "Sealed
// sessions"): cleanly; in a torn tail (a record cut short, NUL bytes, or
// a record that fails authentication, with no valid record after it);
// or in an error: a *eventlog.CorruptError at the damaged record's offset,
// a *KeyError when a key is missing, or an I/O error. A Reader is not
// safe for concurrent use.
type Reader struct {
	p  *plainSource
	ev *eventlog.Reader

	hdrDone bool
	err     error
	// resume is the last record boundary read past: its file offset and
	// the seq of the row that follows it (see Resume).
	resume [2]int64
}

// Option configures a Reader.
type Option func(*readerConfig)

type readerConfig struct {
	path    string
	codec   *eventlog.ZstdCodec
	start   int64
	nextSeq int64
	started bool
	from    int64
}

// WithPath names the file in errors.
func WithPath(path string) Option { return func(c *readerConfig) { c.path = path } }

// WithCodec sets the zstd codec a zstd-layout file's frames are
// decompressed with (required for Zstd).
func WithCodec(codec *eventlog.ZstdCodec) Option { return func(c *readerConfig) { c.codec = codec } }

// WithStart makes the Reader start at a record boundary: the source's
// bytes begin at file offset offset, past the header; the first row must
// hold nextSeq (eventlog.WithStart). Header then returns the zero Header.
func WithStart(offset, nextSeq int64) Option {
	return func(c *readerConfig) { c.start, c.nextSeq, c.started = offset, nextSeq, true }
}

// WithFrom makes Next skip events below from (eventlog.WithFrom).
func WithFrom(from int64) Option { return func(c *readerConfig) { c.from = from } }

// NewReader returns a Reader of the sealed log src in the given layout,
// opening its keys with kr (the envelopes it meets are added to kr).
func NewReader(src io.Reader, enc Encoding, kr *Keyring, opts ...Option) *Reader {
	var c readerConfig
	for _, o := range opts {
		o(&c)
	}
	p := &plainSource{rr: newRecordReader(src, enc, c.start), enc: enc, kr: kr, cfg: c,
		needHeader: !c.started, headerRow: !c.started, fileEnd: c.start}
	evOpts := []eventlog.ReaderOption{eventlog.WithPath(c.path), eventlog.WithFrom(c.from)}
	if c.started {
		evOpts = append(evOpts, eventlog.WithStart(0, c.nextSeq))
	}
	r := &Reader{p: p, ev: eventlog.NewReader(p, evOpts...), resume: [2]int64{c.start, c.nextSeq}}
	p.next = r.ev.NextSeq
	r.hdrDone = c.started
	return r
}

// ClearHeader returns the clear header (reading it when needed).
func (r *Reader) ClearHeader() (ClearHeader, error) {
	if r.p.needHeader {
		r.p.readClearHeader()
	}
	return r.p.clear, r.p.err
}

// Header reads and returns the sealed header row, checked against the
// clear header.
func (r *Reader) Header() (eventlog.Header, error) {
	if r.hdrDone {
		h, _ := r.ev.Header()
		return h, r.Err()
	}
	r.hdrDone = true
	if _, err := r.ClearHeader(); err != nil {
		r.err = err
		return eventlog.Header{}, err
	}
	h, err := r.ev.Header()
	if err != nil {
		r.err = r.translate(err)
		return h, r.err
	}
	if !r.p.clear.matches(h) {
		r.err = &eventlog.CorruptError{Path: r.p.cfg.path, Offset: 0, Seq: -1, Reason: "the clear header and the sealed header row disagree"}
		return h, r.err
	}
	r.resume = [2]int64{r.End(), h.FirstSeq()}
	return h, nil
}

// Next advances to the next event and reports whether there is one.
func (r *Reader) Next() bool {
	if !r.hdrDone {
		if _, err := r.Header(); err != nil {
			return false
		}
	}
	if r.err != nil {
		return false
	}
	if r.ev.Next() {
		r.advanced()
		return true
	}
	return false
}

// SkipRow reads and checks the next row without returning its events
// (eventlog.Reader.SkipRow), and reports whether there was one.
func (r *Reader) SkipRow() bool {
	if !r.hdrDone {
		if _, err := r.Header(); err != nil {
			return false
		}
	}
	if r.err != nil {
		return false
	}
	if r.ev.SkipRow() {
		r.advanced()
		return true
	}
	return false
}

// advanced notes where the read stands after a row: a record boundary
// when the row ends its record.
func (r *Reader) advanced() {
	end := r.ev.End()
	for _, s := range r.p.spans {
		if s.plainEnd == end {
			r.resume = [2]int64{s.fileEnd, r.ev.NextSeq()}
			break
		}
	}
	r.p.trim(end)
}

// Resume returns a point a new Reader can start from with WithStart: the
// file offset just past the last record whose rows were all read (raw:
// the last row; zstd: the last whole frame), and the seq that follows it.
func (r *Reader) Resume() (offset, nextSeq int64) { return r.resume[0], r.resume[1] }

// LastFrame returns the offset and length of the last sealed frame read
// (zstd; zeros for raw, as eventlog.Reader.LastFrame): what a tail frame
// names.
func (r *Reader) LastFrame() (off, n int64) {
	if r.p.enc != Zstd {
		return 0, 0
	}
	return r.p.lastData[0], r.p.lastData[1]
}

// Event returns the event Next advanced to.
func (r *Reader) Event() eventlog.Event { return r.ev.Event() }

// Err returns the error that ended the read, or nil.
func (r *Reader) Err() error {
	if r.err != nil {
		return r.err
	}
	if r.p.err != nil {
		return r.p.err
	}
	if err := r.ev.Err(); err != nil {
		return r.translate(err)
	}
	if t := r.ev.Torn(); t != nil {
		// Authenticated plaintext is whole: a writer wrote it so.
		return &eventlog.CorruptError{Path: r.p.cfg.path, Offset: r.p.fileOffset(t.Offset), Seq: r.ev.NextSeq(),
			Reason: "an authenticated record ends inside a row"}
	}
	return nil
}

// translate maps an error of the eventlog.Reader to the sealed file: a
// corruption found in authenticated plaintext stands at the record that
// holds it.
func (r *Reader) translate(err error) error {
	if r.p.err != nil && errors.Is(err, r.p.err) {
		return r.p.err
	}
	var ce *eventlog.CorruptError
	if errors.As(err, &ce) {
		c := *ce
		if c.Offset >= 0 {
			c.Offset = r.p.fileOffset(c.Offset)
		}
		c.Reason = "in an authenticated record: " + c.Reason
		return &c
	}
	return err
}

// Torn returns the torn tail the read ended on, or nil (always nil when
// the read ended in an error: a log whose header row is torn is no log).
func (r *Reader) Torn() *eventlog.TornTail {
	if r.Err() != nil {
		return nil
	}
	return r.p.torn
}

// End returns the offset in the sealed file just past the last record
// read whole: where a writer appends after cutting a torn tail.
func (r *Reader) End() int64 { return r.p.end(r.ev.End()) }

// NextSeq returns the seq the next row must hold.
func (r *Reader) NextSeq() int64 { return r.ev.NextSeq() }

// KeyUse returns the data key of the last record read and how many
// records it sealed in the file so far: what ResumeSealer needs.
func (r *Reader) KeyUse() (key uint32, sealed uint64) { return r.p.lastKey, r.p.useOfLast }

// Envelopes returns the key records read so far.
func (r *Reader) Envelopes() []Envelope { return r.p.envs }

// All returns the remaining events as an iterator; a read that ends in an
// error yields it last.
func (r *Reader) All() iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		for r.Next() {
			if !yield(r.Event(), nil) {
				return
			}
		}
		if err := r.Err(); err != nil {
			yield(eventlog.Event{}, err)
		}
	}
}

// plainSource is the io.Reader of the plaintext a sealed file holds. It
// reads a record only when its reader has taken every byte of the last,
// and remembers where the records it handed out stand in the file.
type plainSource struct {
	rr  *recordReader
	enc Encoding
	kr  *Keyring
	cfg readerConfig
	// next is the seq the next row must hold (for errors).
	next func() int64

	needHeader bool // the clear header is still to read
	headerRow  bool // the next data record is the sealed header row
	clear      ClearHeader

	pending   []byte // plaintext not yet read
	plainOff  int64  // plaintext offset of the end of what was handed out
	spans     []plainSpan
	fileEnd   int64  // past the last record read
	content   []byte // a zstd frame's decoded rows
	plain     []byte // the last record's plaintext
	ad        []byte
	envs      []Envelope
	lastKey   uint32
	uses      map[uint32]uint64
	useOfLast uint64
	lastData  [2]int64 // offset and length of the last data record opened

	err  error
	torn *eventlog.TornTail
	done bool
}

// plainSpan says that the plaintext up to plainEnd came from the record
// at [fileOff, fileEnd).
type plainSpan struct {
	plainEnd         int64
	fileOff, fileEnd int64
}

func (p *plainSource) fail(err error) {
	p.err, p.done = err, true
}

func (p *plainSource) readClearHeader() {
	p.needHeader = false
	rec, fe, err := p.rr.next(true)
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		p.fail(fmt.Errorf("seal: reading %q: %w", p.cfg.path, err))
		return
	case err != nil || fe != nil:
		p.fail(&eventlog.CorruptError{Path: p.cfg.path, Offset: 0, Seq: -1, Reason: "no complete sealed header"})
		return
	}
	c, err := decodeClearHeader(rec.clear)
	if err != nil {
		var ce *eventlog.CorruptError
		var ve *eventlog.VersionError
		if errors.As(err, &ce) {
			ce.Path = p.cfg.path
		} else if errors.As(err, &ve) {
			ve.Path = p.cfg.path
		}
		p.fail(err)
		return
	}
	if p.kr.session != c.ID {
		p.fail(fmt.Errorf("seal: %q is session %s, the keyring is of session %s", p.cfg.path, c.ID, p.kr.session))
		return
	}
	p.clear, p.fileEnd = c, rec.end
}

// Read implements io.Reader.
func (p *plainSource) Read(b []byte) (int, error) {
	if p.needHeader {
		p.readClearHeader()
	}
	for len(p.pending) == 0 {
		if p.done {
			if p.err != nil {
				return 0, p.err
			}
			return 0, io.EOF
		}
		p.advance()
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

// advance reads records up to the next data record and opens it into
// pending, or ends the read.
func (p *plainSource) advance() {
	rec, fe, err := p.rr.next(false)
	switch {
	case errors.Is(err, io.EOF):
		p.done = true
		return
	case err != nil:
		p.fail(fmt.Errorf("seal: reading %q at offset %d: %w", p.cfg.path, p.rr.off, err))
		return
	case fe != nil:
		p.damaged(fe.off, fe.reason, fe.nul || fe.cut || p.enc == Zstd)
		return
	}
	switch rec.kind {
	case recSkip:
		p.fileEnd = rec.end
		return
	case recKey:
		rec.env.Offset, rec.env.Len = rec.off, rec.n
		p.envs = append(p.envs, rec.env)
		p.kr.Add(rec.env)
		p.fileEnd = rec.end
		return
	case recHeader:
		p.damaged(rec.off, "a second sealed header", false)
		return
	}
	plain, err := p.open(rec)
	if errors.Is(err, ErrNoKey) {
		var ke *KeyError
		errors.As(err, &ke)
		ke.Path = p.cfg.path
		p.fail(ke)
		return
	}
	if err != nil {
		if p.enc == Zstd {
			// Its size field may be what is damaged: a valid frame is
			// looked for from its second byte on.
			p.rr.unread(rec.end - rec.off - 1)
		}
		p.damaged(rec.off, err.Error(), true)
		return
	}
	if p.enc == Zstd {
		content, err := p.cfg.codec.DecodeFrame(plain, p.content)
		if err != nil || (len(content) > 0 && content[len(content)-1] != '\n') {
			reason := "an authenticated frame that does not decode, or ends inside a row"
			if err != nil {
				reason += ": " + err.Error()
			}
			p.fail(&eventlog.CorruptError{Path: p.cfg.path, Offset: rec.off, Seq: p.next(), Reason: reason})
			return
		}
		p.content = content
		plain = content
	} else {
		plain = append(plain, '\n')
	}
	p.headerRow = false
	if p.uses == nil {
		p.uses = map[uint32]uint64{}
	}
	p.uses[rec.key]++
	p.lastKey, p.useOfLast = rec.key, p.uses[rec.key]
	p.lastData = [2]int64{rec.off, rec.end - rec.off}
	p.pending = plain
	p.plainOff += int64(len(plain))
	p.spans = append(p.spans, plainSpan{plainEnd: p.plainOff, fileOff: rec.off, fileEnd: rec.end})
	p.fileEnd = rec.end
}

// errAuth is a record that fails authentication.
var errAuth = errors.New("a sealed record that fails authentication")

// open authenticates and decrypts a data record.
func (p *plainSource) open(rec record) ([]byte, error) {
	k, err := p.kr.Key(rec.key)
	if err != nil {
		return nil, err
	}
	if len(rec.sealed) < nonceSize+tagSize {
		return nil, errAuth
	}
	p.ad = aad(p.ad[:0], p.kr.session, p.enc, rec.key, p.headerRow)
	// The plaintext buffer is reused: its reader has copied all of the
	// last record's before it asks for the next.
	plain, err := k.aead.Open(p.plain[:0], rec.sealed[:nonceSize], rec.sealed[nonceSize:], p.ad)
	if err != nil {
		return nil, errAuth
	}
	p.plain = plain[:0:cap(plain)]
	return plain, nil
}

// damaged decides what a bad record at off is (docs/format.md §9): with
// a valid record after it, corruption; else, when tornOK (a record cut
// short, NUL bytes, an authentication failure, any damage of a frame), a
// torn tail from off; else (a raw line that is no record) corruption.
func (p *plainSource) damaged(off int64, reason string, tornOK bool) {
	valid := func(rec record) bool {
		k, err := p.kr.Key(rec.key)
		if err != nil {
			return true // it may well open with its key: not torn
		}
		ad := aad(nil, p.kr.session, p.enc, rec.key, false)
		_, err = k.aead.Open(nil, rec.sealed[:nonceSize], rec.sealed[nonceSize:], ad)
		return err == nil
	}
	found, err := p.rr.validAhead(valid)
	switch {
	case err != nil:
		p.fail(fmt.Errorf("seal: reading %q after offset %d: %w", p.cfg.path, off, err))
	case found:
		p.fail(&eventlog.CorruptError{Path: p.cfg.path, Offset: off, Seq: p.next(), Reason: reason + ", followed by a valid record"})
	case !tornOK:
		p.fail(&eventlog.CorruptError{Path: p.cfg.path, Offset: off, Seq: p.next(), Reason: reason})
	default:
		if _, err := p.rr.rest(); err != nil {
			p.fail(fmt.Errorf("seal: reading %q after offset %d: %w", p.cfg.path, off, err))
			return
		}
		p.done = true
		p.torn = &eventlog.TornTail{Offset: off, Bytes: p.rr.off - off}
	}
}

// trim forgets the spans of plaintext the eventlog.Reader has read past.
func (p *plainSource) trim(plainEnd int64) {
	k := 0
	for k < len(p.spans)-1 && p.spans[k].plainEnd <= plainEnd {
		k++
	}
	if k > 0 {
		p.spans = append(p.spans[:0], p.spans[k:]...)
	}
}

// fileOffset returns the file offset of the record holding plaintext
// offset off.
func (p *plainSource) fileOffset(off int64) int64 {
	for _, s := range p.spans {
		if off < s.plainEnd {
			return s.fileOff
		}
	}
	if n := len(p.spans); n > 0 {
		return p.spans[n-1].fileEnd
	}
	return p.fileEnd
}

// end maps the plaintext offset past the last good row to the file: past
// every record read when the reader took all the plaintext, else past
// the record that ends there.
func (p *plainSource) end(plainEnd int64) int64 {
	if plainEnd >= p.plainOff && len(p.pending) == 0 {
		return p.fileEnd
	}
	for _, s := range p.spans {
		if s.plainEnd == plainEnd {
			return s.fileEnd
		}
		if s.plainEnd > plainEnd {
			return s.fileOff
		}
	}
	return p.fileEnd
}
