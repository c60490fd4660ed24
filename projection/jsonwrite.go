package projection

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// The transcript's state is the largest a replay builds (every text and
// output since the last compaction), and json.Marshal of it cost three
// times the replay itself: reflection, and a full JSON scan of every raw
// output to compact it again. The functions here write the same bytes by
// hand: a string as encoding/json's HTML-safe encoder writes it, a raw
// value as json.Marshal writes a json.RawMessage (insignificant space
// dropped, <, >, & and U+2028, U+2029 escaped). FuzzStateJSONMatchesMarshal
// holds them to encoding/json's output. A raw value is trusted to be valid
// JSON, as every raw value a projection keeps is a piece of data a log's
// reader validated.

const hexDigits = "0123456789abcdef"

// htmlSafe marks the ASCII bytes encoding/json writes as they are in a
// string with HTML escaping (its htmlSafeSet).
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// SWAR constants: a byte repeated in every lane of a uint64.
const (
	lanes1 = 0x0101010101010101
	lanes8 = 0x8080808080808080
)

// eq returns the lanes of x equal to c, as the high bit of each lane
// (exact: no false positives next to a match, unlike the classic
// haszero, because the borrow is kept out of the high bit).
func eq(x uint64, c byte) uint64 {
	y := x ^ (lanes1 * uint64(c))
	return ^(((y &^ lanes8) + (lanes8 - lanes1)) | y) & lanes8
}

// stringStops returns a mask of the lanes of x that encoding/json does not
// write as they are in a string: control bytes, '"', '\\', '<', '>', '&'
// and every byte from 0x80 (decoded one rune at a time).
func stringStops(x uint64) uint64 {
	ctl := ^(((x &^ lanes8) + (lanes8 - lanes1*0x20)) | x) & lanes8 // < 0x20
	return ctl | x&lanes8 | eq(x, '"') | eq(x, '\\') | eq(x, '<') | eq(x, '>') | eq(x, '&')
}

// appendString appends s as encoding/json writes a string with HTML
// escaping (json.Marshal's default).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start, i := 0, 0
	for i < len(s) {
		for i+8 <= len(s) {
			m := stringStops(load64(s, i))
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// rawStringStops returns a mask of the lanes of x that appendRaw must look
// at inside a string: the quote that may end it, a backslash (whose next
// byte is never a stop), and what json.Marshal escapes.
func rawStringStops(x uint64) uint64 {
	return eq(x, '"') | eq(x, '\\') | eq(x, '<') | eq(x, '>') | eq(x, '&') | eq(x, 0xE2)
}

// errEmptyRaw is json.Marshal's complaint about an empty RawMessage that is
// not nil.
var errEmptyRaw = errors.New("json: error calling MarshalJSON for type json.RawMessage: unexpected end of JSON input")

// appendRaw appends raw, a valid JSON value, as json.Marshal writes a
// json.RawMessage: "null" for nil, insignificant space dropped, and <, >,
// & and U+2028, U+2029 escaped (they can stand only in strings).
func appendRaw(dst, raw []byte) ([]byte, error) {
	if raw == nil {
		return append(dst, "null"...), nil
	}
	if len(raw) == 0 {
		return dst, errEmptyRaw
	}
	if verbatim(raw) {
		return append(dst, raw...), nil
	}
	start, i := 0, 0
	for i < len(raw) {
		switch c := raw[i]; c {
		case '"':
			i = appendRawString(&dst, raw, &start, i+1)
			continue
		case ' ', '\t', '\r', '\n':
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
		i++
	}
	return append(dst, raw[start:]...), nil
}

// verbatim reports whether json.Marshal writes raw, a valid JSON value, as
// it is: no byte it escapes ('<', '>', '&', and 0xE2, which U+2028 and
// U+2029 begin with) and, unless raw is a string, quoted at both ends (no
// whitespace outside it), no whitespace byte. A tool's output, most of a
// transcript, is a string with escapes all through it, which the scan of
// appendRawString stops at one by one; IndexByte passes over it in a few
// vector sweeps.
func verbatim(raw []byte) bool {
	for _, c := range [...]byte{'<', '>', '&', 0xE2} {
		if bytes.IndexByte(raw, c) >= 0 {
			return false
		}
	}
	if raw[0] == '"' && raw[len(raw)-1] == '"' {
		return true
	}
	for _, c := range [...]byte{' ', '\t', '\n', '\r'} {
		if bytes.IndexByte(raw, c) >= 0 {
			return false
		}
	}
	return true
}

// appendRawString goes through the string of raw whose body starts at i,
// escaping what json.Marshal escapes (the bytes before *start not written
// yet), and returns the index past its closing quote.
func appendRawString(dst *[]byte, raw []byte, start *int, i int) int {
	for i < len(raw) {
		for i+8 <= len(raw) {
			if m := rawStringStops(binary.LittleEndian.Uint64(raw[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(raw) {
			break
		}
		switch c := raw[i]; c {
		case '"':
			return i + 1
		case '\\':
			i += 2
			continue
		case '<', '>', '&':
			*dst = append(*dst, raw[*start:i]...)
			*dst = append(*dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			*start = i + 1
		case 0xE2:
			if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				*dst = append(*dst, raw[*start:i]...)
				*dst = append(*dst, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
				i += 3
				*start = i
				continue
			}
		}
		i++
	}
	return len(raw)
}

// load64 returns the eight bytes of s at i as a little-endian uint64.
func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// appendInt appends n in decimal.
func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }
