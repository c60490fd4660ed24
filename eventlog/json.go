package eventlog

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// A small strict JSON scanner: the row decoder and Storable need to find
// where a value ends and whether it is valid without building it, and
// without the reflection of encoding/json on the hot path.

var (
	errTrailing  = errors.New("unexpected bytes after the value")
	errEnd       = errors.New("unexpected end of input")
	errTooDeep   = errors.New("nesting too deep")
	errNotInt    = errors.New("not a JSON integer")
	errIntRange  = errors.New("integer out of range")
	errBadString = errors.New("invalid string")
	errBadUTF8   = errors.New("invalid UTF-8 in string")
)

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// scanValue scans one JSON value starting at b[i] (no leading whitespace)
// and returns the index just past it and whether insignificant whitespace
// occurred inside it.
func scanValue(b []byte, i int) (end int, ws bool, err error) {
	return scanDepth(b, i, 0)
}

func scanDepth(b []byte, i, depth int) (int, bool, error) {
	if i >= len(b) {
		return i, false, errEnd
	}
	switch c := b[i]; {
	case c == '"':
		j, _, err := scanString(b, i)
		return j, false, err
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return i, false, errTooDeep
		}
		return scanContainer(b, i, depth)
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	default:
		return i, false, errors.New("invalid character " + strconv.QuoteRune(rune(c)) + " at value start")
	}
}

func scanLiteral(b []byte, i int, lit string) (int, bool, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false, errors.New("invalid literal")
	}
	return i + len(lit), false, nil
}

func scanContainer(b []byte, i, depth int) (int, bool, error) {
	return scanContainerInto(b, i, depth, nil)
}

// elemSink collects the elements of an array as scanContainerInto scans
// it: the first max of them, counting them all.
type elemSink struct {
	elems [][]byte
	max   int
	count int
}

// scanContainerInto is scanContainer, handing each element of an array
// to sink when it is not nil, so that a caller that needs the elements
// does not scan the array twice.
func scanContainerInto(b []byte, i, depth int, sink *elemSink) (int, bool, error) {
	closer, obj := byte(']'), b[i] == '{'
	if obj {
		closer = '}'
	}
	ws := false
	j := i + 1
	k := skipWS(b, j)
	ws = ws || k != j
	j = k
	if j < len(b) && b[j] == closer {
		return j + 1, ws, nil
	}
	for {
		if obj {
			if j >= len(b) || b[j] != '"' {
				return j, ws, errors.New("object key must be a string")
			}
			var err error
			if j, _, err = scanString(b, j); err != nil {
				return j, ws, err
			}
			k = skipWS(b, j)
			ws = ws || k != j
			j = k
			if j >= len(b) || b[j] != ':' {
				return j, ws, errors.New("missing ':' after object key")
			}
			j++
			k = skipWS(b, j)
			ws = ws || k != j
			j = k
		}
		var inner bool
		var err error
		start := j
		j, inner, err = scanDepth(b, j, depth+1)
		if err != nil {
			return j, ws, err
		}
		if sink != nil {
			if sink.count < sink.max {
				sink.elems = append(sink.elems, b[start:j])
			}
			sink.count++
		}
		ws = ws || inner
		k = skipWS(b, j)
		ws = ws || k != j
		j = k
		if j >= len(b) {
			return j, ws, errEnd
		}
		switch b[j] {
		case ',':
			j++
			k = skipWS(b, j)
			ws = ws || k != j
			j = k
		case closer:
			return j + 1, ws, nil
		default:
			return j, ws, errors.New("expected ',' or closing bracket")
		}
	}
}

// scanString scans a JSON string starting at the quote b[i]. escaped reports
// whether it held a backslash escape. The string must be UTF-8 (RFC 8259
// §8.1): a byte sequence that is not is refused in the same pass, so
// writers (Validate) and readers (decodeRow) share one definition. Escapes
// are checked for their grammar only: a \u escape of a lone surrogate is
// valid JSON text.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	j := i + 1
	for j < len(b) {
		// Skip plain ASCII eight bytes at a time, then one at a time
		// near the end of b.
		for j+8 <= len(b) {
			if m := stringStops(binary.LittleEndian.Uint64(b[j:])); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		for j < len(b) && plainASCII[b[j]] {
			j++
		}
		if j >= len(b) {
			break
		}
		if b[j] == '"' {
			return j + 1, escaped, nil
		}
		escaped = escaped || b[j] == '\\'
		if j, err = scanStop(b, j); err != nil {
			return j, escaped, err
		}
	}
	return j, escaped, errEnd
}

// scanStop scans the string byte b[j] that is not plain ASCII, nor the
// closing quote: a UTF-8 sequence or an escape, returning the index past
// it; a control byte or a bad sequence is an error at j.
func scanStop(b []byte, j int) (int, error) {
	switch c := b[j]; {
	case c >= utf8.RuneSelf:
		r, size := utf8.DecodeRune(b[j:])
		if r == utf8.RuneError && size == 1 {
			return j, errBadUTF8
		}
		return j + size, nil
	case c == '\\':
		if j+1 >= len(b) {
			return j, errEnd
		}
		switch b[j+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			return j + 2, nil
		case 'u':
			if j+6 > len(b) {
				return j, errEnd
			}
			for _, h := range b[j+2 : j+6] {
				if !isHex(h) {
					return j, errBadString
				}
			}
			return j + 6, nil
		}
		return j, errBadString
	}
	return j, errors.New("control character in string")
}

// Byte lanes of a uint64.
const (
	lanes1 = 0x0101010101010101 // 0x01 in every byte
	lanes8 = 0x8080808080808080 // the high bit of every byte
)

// stringStops returns a mask of x, eight bytes of a string loaded
// little-endian, whose lowest set bit is the high bit of the first byte
// that is not plain ASCII (plainASCII: a control byte, '"', '\\' or a
// byte from 0x80), and 0 when all eight are plain. Bits above the lowest
// may be spurious (a borrow carries into the next byte), so only the
// lowest is meaningful.
func stringStops(x uint64) uint64 {
	q := x ^ (lanes1 * '"')
	bs := x ^ (lanes1 * '\\')
	ctl := (x - lanes1*0x20) &^ x    // bytes below 0x20
	quote := (q - lanes1) &^ q       // bytes equal to '"'
	backslash := (bs - lanes1) &^ bs // bytes equal to '\\'
	return (ctl | quote | backslash | x) & lanes8
}

// PlainString reports whether body, the bytes between a JSON string's
// quotes, is plain ASCII (printable, no quote, no backslash): its bytes are
// then the string, with nothing to unescape. It looks at eight bytes at a
// time, as the string scan does.
func PlainString(body []byte) bool {
	for len(body) >= 8 {
		if stringStops(binary.LittleEndian.Uint64(body)) != 0 {
			return false
		}
		body = body[8:]
	}
	for _, c := range body {
		if !plainASCII[c] {
			return false
		}
	}
	return true
}

// plainASCII marks the bytes that stand for themselves in a JSON string:
// ASCII from 0x20, except the quote and the backslash.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func scanNumber(b []byte, i int) (int, bool, error) {
	j := i
	if b[j] == '-' {
		j++
	}
	if j >= len(b) {
		return j, false, errEnd
	}
	switch {
	case b[j] == '0':
		j++
	case b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return j, false, errors.New("invalid number")
	}
	if j < len(b) && b[j] == '.' {
		j++
		start := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == start {
			return j, false, errors.New("invalid number")
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		start := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == start {
			return j, false, errors.New("invalid number")
		}
	}
	return j, false, nil
}

// scanUint scans a non-negative JSON integer (no sign, fraction or
// exponent) at b[i].
func scanUint(b []byte, i int) (v int64, end int, err error) {
	if i >= len(b) {
		return 0, i, errNotInt
	}
	j, _, err := scanNumber(b, i)
	if err != nil {
		return 0, j, errNotInt
	}
	if b[i] == '-' {
		return 0, j, errors.New("negative integer")
	}
	for k := i; k < j; k++ {
		c := b[k]
		if c < '0' || c > '9' {
			return 0, j, errNotInt
		}
		if v > (1<<63-1-int64(c-'0'))/10 {
			return 0, j, errIntRange
		}
		v = v*10 + int64(c-'0')
	}
	return v, j, nil
}

// scanJSON checks that data is one JSON value, possibly surrounded by
// whitespace, and reports whether it is compact: no whitespace at all
// outside strings.
func scanJSON(data []byte) (compact bool, err error) {
	start := skipWS(data, 0)
	end, ws, err := scanValue(data, start)
	if err != nil {
		return false, err
	}
	if skipWS(data, end) != len(data) {
		return false, errTrailing
	}
	return !ws && start == 0 && end == len(data), nil
}

// appendCompact appends the valid JSON value src to dst without
// insignificant whitespace.
func appendCompact(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '"' {
			j, _, _ := scanString(src, i)
			dst = append(dst, src[i:j]...)
			i = j - 1
			continue
		}
		if !isWS(c) {
			dst = append(dst, c)
		}
	}
	return dst
}
