package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"math"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Emit receives the events of a conversion, in seq order from 0, as each
// source record is done. An error stops the conversion and is returned by
// it as it is (it is not an error about the source).
type Emit func(eventlog.Event) error

// Builder makes the events of one conversion, seqs from 0, each with data
// marshalled as compact JSON without HTML escapes. It checks each event as
// the log does on append (eventlog.Storable): the first event that cannot
// be marshalled or stored is Err, a format error (a trace can hold a value
// too large, or too deeply nested, to be stored once converted).
//
// It streams: the events of the current source record (see Record) are
// held until the record is done, then handed to Emit; events made outside
// a record (the closers at the end of a trace) are handed on at Flush. So
// a conversion holds one record's events at a time, whatever the length of
// the trace. A Builder is used by one goroutine.
type Builder struct {
	emit    Emit
	cfg     Config
	pending []eventlog.Event // made since the last flush
	next    int64            // seq of the next event
	last    int64            // time of the last event
	err     error
	emitErr error // the first error of emit: the conversion stops

	// the current source record (see Record), and the builder as it was
	// before it (see Drop)
	line    int
	raw     json.RawMessage
	taken   bool
	records int
	mark    struct {
		pending int
		next    int64
		last    int64
		err     error
	}

	// the source bytes the records came from (see Read)
	sum   hash.Hash
	bytes int64
	torn  *Torn
	bad   *RecordError   // the record a Partial session stops before
	skips []*RecordError // the records SkipBad went past
}

// NewBuilder returns a builder that hands its events to emit (nil: they
// are dropped), configured by cfg.
func NewBuilder(cfg Config, emit Emit) *Builder {
	if emit == nil {
		emit = func(eventlog.Event) error { return nil }
	}
	return &Builder{emit: emit, cfg: cfg, sum: sha256.New()}
}

// Add appends an event of type typ at time t (Unix ms; a negative t means
// "the time of the previous event") and returns its seq. data is
// marshalled (a json.RawMessage is kept as it is).
func (b *Builder) Add(typ string, t int64, data any) int64 {
	if t < 0 {
		t = b.last
	}
	seq := b.next
	b.next++
	raw, err := Marshal(data)
	if err != nil && b.err == nil {
		b.err = Formatf("seq %d: %s: %w", seq, typ, err)
	}
	e := eventlog.Event{Seq: seq, Type: typ, Time: t, Data: raw}
	if err == nil && b.err == nil {
		b.err = storable(e)
	}
	b.pending = append(b.pending, e)
	b.last = t
	return seq
}

// storable returns a format error unless the log takes e: a valid event
// whose row, at the widest seq a row can hold, is within
// eventlog.MaxRowSize (what handle.Append checks).
func storable(e eventlog.Event) error {
	if _, err := eventlog.Storable(e); err != nil {
		return Formatf("seq %d: %v", e.Seq, err)
	}
	return nil
}

// Err returns the first error about an event made: one that cannot be
// marshalled or that the log would refuse.
func (b *Builder) Err() error { return b.err }

// Last returns the time of the last event (0 before one).
func (b *Builder) Last() int64 { return b.last }

// Next returns the seq the next event gets.
func (b *Builder) Next() int64 { return b.next }

// Records returns how many records Record began (and Drop did not undo).
func (b *Builder) Records() int { return b.records }

// Flush hands the events made so far to Emit. It returns the error of an
// event that cannot be stored (a format error) or Emit's.
func (b *Builder) Flush() error {
	if b.err != nil {
		return b.err
	}
	if b.emitErr != nil {
		return b.emitErr
	}
	for i := range b.pending {
		if err := b.emit(b.pending[i]); err != nil {
			b.emitErr = err
			return err
		}
		b.pending[i] = eventlog.Event{} // let the data go
	}
	b.pending = b.pending[:0]
	return nil
}

// Done flushes what is left and fills s with what the conversion read
// and made: Records, Events (the count), Bytes and Digest of the source
// bytes read (Read), and the damage found (Partial, Skipped, Torn).
func (b *Builder) Done(s *Session) error {
	if err := b.Flush(); err != nil {
		return err
	}
	s.Records, s.Count = b.records, b.next
	s.Bytes, s.Digest = b.bytes, "sha256:"+hex.EncodeToString(b.sum.Sum(nil))
	s.Partial, s.Skipped, s.Torn = b.bad, b.skips, b.torn
	return nil
}

// Read counts p as source bytes the session is made of (its Bytes and
// Digest). Lines calls it for each line it keeps; a converter of another
// kind of source calls it for the bytes it reads.
func (b *Builder) Read(p []byte) {
	b.sum.Write(p)
	b.bytes += int64(len(p))
}

// Tokens is the sum of token counts; ok is false when a count is negative
// or the sum is beyond int64.
func Tokens(counts ...int64) (sum int64, ok bool) {
	for _, n := range counts {
		if n < 0 || sum > math.MaxInt64-n {
			return 0, false
		}
		sum += n
	}
	return sum, true
}

// Record begins the events of one source record: its line (or index,
// from 1) and its bytes, which must stay as they are until the record is
// ended by Keep (or undone by Drop).
func (b *Builder) Record(line int, raw json.RawMessage) {
	b.mark.pending, b.mark.next, b.mark.last, b.mark.err = len(b.pending), b.next, b.last, b.err
	b.line, b.raw, b.taken = line, raw, false
	b.records++
}

// Drop undoes the current record: its events, and an error they caused.
func (b *Builder) Drop() {
	clear(b.pending[b.mark.pending:])
	b.pending, b.next, b.last, b.err = b.pending[:b.mark.pending], b.mark.next, b.mark.last, b.mark.err
	b.raw, b.taken = nil, false
	b.records--
}

// Src is the "source" value of an event made from the current record:
// {"line","record"} for the first event that asks, {"line"} after. Use it
// only in the data of an event added at once.
func (b *Builder) Src() Obj {
	if b.taken || b.raw == nil {
		return Obj{"line", int64(b.line)}
	}
	b.taken = true
	return Obj{"line", int64(b.line), "record", b.raw}
}

// Taken reports whether an event took the current record.
func (b *Builder) Taken() bool { return b.taken }

// AddRecord adds an event of type typ at time t (see Add) whose data is
// the current record, unless an event took it already. typ must be of
// the format's namespace (see Namespace).
func (b *Builder) AddRecord(typ string, t int64) {
	if !b.taken && b.raw != nil {
		b.Add(typ, t, b.raw)
		b.taken = true
	}
}

// Keep ends the current record: when no event took it (Src), it adds an
// event of type typ at time t whose data is the record (AddRecord).
func (b *Builder) Keep(typ string, t int64) {
	b.AddRecord(typ, t)
	b.raw, b.taken = nil, false
}

// open reports whether a record was begun and not ended.
func (b *Builder) open() bool { return b.raw != nil }

// errTooLong is the reason of a line over the limit.
func errTooLong(limit int) error {
	return Formatf("more than the %d bytes a line may have", limit)
}

// Limit returns the largest record a conversion reads: cfg.MaxLine, or
// eventlog.MaxRowSize (a record is kept whole in an event, so one larger
// could not be stored).
func (c Config) Limit() int {
	if c.MaxLine > 0 {
		return c.MaxLine
	}
	return eventlog.MaxRowSize
}
