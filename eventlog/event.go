package eventlog

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
)

// These constants are part of the wire format of version 1.
const (
	// FormatName is the value of the header's "format" key.
	FormatName = "sessionlog"
	// Version is the format version this package writes.
	Version = 1
)

// supportedVersions lists the format versions this package reads; a
// *VersionError names them.
func supportedVersions() []int { return []int{Version} }

// Event is the only unit that is persisted: one entry of a session's log.
//
// Data holds the event's JSON value exactly as stored; nil means null.
// Writers store the compacted form of what they were given (see
// Storable) and never re-encode it.
type Event struct {
	Seq  int64
	Type string
	Time int64 // Unix milliseconds, >= 0, not required to be monotonic
	Data json.RawMessage
}

// Validate checks the rules a row imposes on an event, except its seq,
// which the writer assigns: the type's length and charset, a time >= 0 and
// data that is one valid JSON value. It does not check the row size; see
// RowSize.
func (e Event) Validate() error {
	_, err := e.checkData()
	return err
}

// checkData is Validate, and reports whether the data are compact (see
// scanJSON): the data are scanned once, for both.
func (e Event) checkData() (compact bool, err error) {
	if err := ValidateType(e.Type); err != nil {
		return false, err
	}
	if e.Time < 0 {
		return false, invalidf("time %d is negative", e.Time)
	}
	if e.Data == nil {
		return true, nil
	}
	compact, err = scanJSON(e.Data)
	if err != nil {
		return false, invalidf("data of type %q is not valid JSON: %v", e.Type, err)
	}
	return compact, nil
}

// ValidateType reports whether t is a valid event type: 1 to 128
// characters from A-Z a-z 0-9 . _ : / -.
func ValidateType(t string) error {
	if len(t) == 0 || len(t) > maxTypeLen {
		return invalidf("type must be 1 to %d characters, got %d", maxTypeLen, len(t))
	}
	for i := 0; i < len(t); i++ {
		if !typeChar[t[i]] {
			return invalidf("type %q has a character outside A-Z a-z 0-9 . _ : / -", t)
		}
	}
	return nil
}

var typeChar = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "._:/-" {
		t[c] = true
	}
	return t
}()

// compacted returns the valid JSON value data without insignificant
// whitespace: data itself when scanJSON found it compact, else a copy.
func compacted(data json.RawMessage, compact bool) json.RawMessage {
	if compact {
		return data
	}
	return appendCompact(make([]byte, 0, len(data)), data)
}

// RowSize is the size in bytes (without '\n') of the unpacked row that
// holds e.
func RowSize(e Event) int {
	n := len(`{"seq":,"type":"","time":,"data":}`) + len(e.Type) + intLen(e.Seq) + intLen(e.Time)
	if e.Data == nil {
		return n + 4
	}
	return n + len(e.Data)
}

// intLen is len(strconv.AppendInt(nil, v, 10)), counted without writing
// the digits: the writer sizes every row and packed element with it.
func intLen(v int64) int {
	n, u := 0, uint64(v)
	if v < 0 {
		n, u = 1, -u // the sign; -u is |v|, math.MinInt64 included
	}
	// In constant time, not a division a digit (a time has 13): with
	// 1233/4096 just above log10(2), t is floor(log10(u)) or one more, and
	// u < 10^t tells which.
	u |= 1 // 0 has one digit, as 1
	t := bits.Len64(u) * 1233 >> 12
	if u < pow10[t] {
		return n + t
	}
	return n + t + 1
}

// pow10[i] is 10^i, up to the largest a uint64 holds.
var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// AppendCanon appends canon(e) (docs/format.md §6) to dst, without a newline:
// {"seq":S,"type":"T","time":MS,"data":D} with D the stored data bytes or
// null. It is also the unpacked row a writer stores.
func AppendCanon(dst []byte, e Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, e.Type...)
	dst = append(dst, `","time":`...)
	dst = strconv.AppendInt(dst, e.Time, 10)
	dst = append(dst, `,"data":`...)
	if e.Data == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, e.Data...)
	}
	return append(dst, '}')
}

// Canon returns canon(e) as a new slice.
func Canon(e Event) []byte { return AppendCanon(make([]byte, 0, RowSize(e)), e) }

// Storable returns e as a writer stores it — its data compacted — or why
// a writer refuses it: an invalid event (ErrInvalidEvent), reserved data
// that does not parse, or a row that would pass MaxRowSize at the widest
// seq a row can hold (ErrTooLarge). A checkpoint's log digest, which
// needs the log, is not checked. It is the one check handle.Append and the
// importers share, so an import never writes what Append would refuse.
func Storable(e Event) (Event, error) {
	// One scan validates and finds whether the data need compacting: on
	// the append path it is most of the CPU an event costs.
	compact, err := e.checkData()
	if err != nil {
		return e, err
	}
	d := compacted(e.Data, compact)
	switch e.Type {
	case TypeCheckpoint:
		_, err = ParseCheckpoint(d)
	case TypeRollback:
		_, err = ParseRollback(d)
	}
	if err != nil {
		return e, err
	}
	e.Data = d
	widest := e
	widest.Seq = 1 << 62 // the widest seq a row can hold
	if size := RowSize(widest); size > MaxRowSize {
		return e, fmt.Errorf("%w: the row of a %q event would be %d bytes, the limit is %d", ErrTooLarge, e.Type, size, MaxRowSize)
	}
	return e, nil
}
