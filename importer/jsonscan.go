package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Scanner walks one JSON document a value at a time, so that a format
// made of one document (a SWE-agent trajectory) is read without holding
// it: an object's members and an array's elements are visited in turn,
// and a value is either skipped (nothing held) or captured whole, up to a
// limit — a value over it is refused as soon as the limit is crossed. It
// finds the structure (strings, nesting) and leaves validating a captured
// value to whoever decodes it.
type Scanner struct {
	br    *bufio.Reader
	limit int
	off   int64
	buf   []byte
	n     int   // bytes of the value being read
	start int64 // offset of the value being read
}

// NewScanner returns a scanner of r that captures values of at most limit
// bytes.
func NewScanner(r io.Reader, limit int) *Scanner {
	return &Scanner{br: bufio.NewReaderSize(r, 64<<10), limit: limit}
}

// Offset is how many bytes the scanner has consumed.
func (s *Scanner) Offset() int64 { return s.off }

// ErrTooLarge is wrapped by the error about a value over the limit.
var ErrTooLarge = errors.New("importer: value too large")

func (s *Scanner) errf(format string, args ...any) error {
	return Formatf("offset %d: %s", s.off, fmt.Sprintf(format, args...))
}

func (s *Scanner) readByte() (byte, error) {
	c, err := s.br.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, s.errf("unexpected end of the document")
		}
		return 0, err
	}
	s.off++
	return c, nil
}

// peek returns the next byte that is not white space, without consuming
// it; at the end of the input it returns io.EOF.
func (s *Scanner) peek() (byte, error) {
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			s.off++
			continue
		}
		_ = s.br.UnreadByte() // the caller consumes it
		return c, nil
	}
}

// capture takes c, the next byte of the value being read: appended to the
// value when on, counted either way, and the value refused once it passes
// the limit (one that large can never be stored, skipped or not).
func (s *Scanner) capture(on bool, c byte) error {
	if s.n >= s.limit {
		return FormatError(fmt.Errorf("offset %d: %w: more than the %d bytes a record may have", s.start, ErrTooLarge, s.limit))
	}
	s.n++
	if on {
		s.buf = append(s.buf, c)
	}
	return nil
}

// value reads one value, capturing its bytes when asked.
func (s *Scanner) value(capture bool) error {
	s.n = 0
	c, err := s.peek()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return s.errf("unexpected end of the document")
		}
		return err
	}
	s.start = s.off
	if _, err := s.readByte(); err != nil {
		return err
	}
	if err := s.capture(capture, c); err != nil {
		return err
	}
	switch c {
	case '"':
		return s.rest(capture, true, 0)
	case '{', '[':
		return s.rest(capture, false, 1)
	case '}', ']', ',', ':':
		return s.errf("%q where a value should be", c)
	}
	// A number or a literal: up to the next delimiter.
	for {
		c, err := s.br.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		s.off++
		switch c {
		case ',', '}', ']', ' ', '\t', '\n', '\r', ':':
			_ = s.br.UnreadByte()
			s.off--
			return nil
		}
		if err := s.capture(capture, c); err != nil {
			return err
		}
	}
}

// rest reads the rest of a string (inString) or of a nested value of the
// given depth.
func (s *Scanner) rest(capture, inString bool, depth int) error {
	escaped := false
	for {
		c, err := s.readByte()
		if err != nil {
			return err
		}
		if err := s.capture(capture, c); err != nil {
			return err
		}
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
			if depth == 0 {
				return nil
			}
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return nil
			}
		}
	}
}

// Raw reads the next value whole (at most the limit) and returns a copy
// of its bytes.
func (s *Scanner) Raw() (json.RawMessage, error) {
	s.buf = s.buf[:0]
	if err := s.value(true); err != nil {
		return nil, err
	}
	return bytes.Clone(s.buf), nil
}

// Skip reads past the next value, holding none of it.
func (s *Scanner) Skip() error { return s.value(false) }

// expect consumes the next non-space byte, which must be c.
func (s *Scanner) expect(c byte) error {
	got, err := s.peek()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return s.errf("unexpected end of the document, want %q", c)
		}
		return err
	}
	if got != c {
		return s.errf("%q, want %q", got, c)
	}
	_, err = s.readByte()
	return err
}

// list reads the members of an object (open '{', close '}') or the
// elements of an array, calling each for every one.
func (s *Scanner) list(open, close byte, each func() error) error {
	if err := s.expect(open); err != nil {
		return err
	}
	c, err := s.peek()
	if err != nil {
		return s.errf("unexpected end of the document")
	}
	if c == close {
		_, err := s.readByte()
		return err
	}
	for {
		if err := each(); err != nil {
			return err
		}
		c, err := s.peek()
		if err != nil {
			return s.errf("unexpected end of the document")
		}
		if _, err := s.readByte(); err != nil {
			return err
		}
		switch c {
		case ',':
		case close:
			return nil
		default:
			return s.errf("%q, want ',' or %q", c, close)
		}
	}
}

// Object reads an object: for each member it calls fn with the key,
// which must consume the member's value (Raw, Skip, Object or Array).
func (s *Scanner) Object(fn func(key string) error) error {
	return s.list('{', '}', func() error {
		raw, err := s.Raw()
		if err != nil {
			return err
		}
		var key string
		if err := json.Unmarshal(raw, &key); err != nil {
			return s.errf("a key that is not a string")
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		return fn(key)
	})
}

// Array reads an array, calling fn for each element, which fn must
// consume (Raw, Skip, Object or Array).
func (s *Scanner) Array(fn func() error) error { return s.list('[', ']', fn) }

// Peek returns the first byte of the next value ('{', '[', '"'…), or
// io.EOF at the end of the input.
func (s *Scanner) Peek() (byte, error) { return s.peek() }

// End checks that nothing but white space follows the document.
func (s *Scanner) End() error {
	if _, err := s.peek(); err == nil {
		return s.errf("more after the end of the document")
	} else if !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Head reads the members of the first JSON object of head that it holds
// whole (head may end inside one), by key; ok is false when head does not
// start with an object. For sniffing a format from a file's first bytes.
func Head(head []byte) (members map[string]json.RawMessage, ok bool) {
	s := NewScanner(bytes.NewReader(head), len(head)+1)
	members = map[string]json.RawMessage{}
	if c, err := s.Peek(); err != nil || c != '{' {
		return nil, false
	}
	_ = s.Object(func(key string) error {
		raw, err := s.Raw()
		if err != nil {
			return err
		}
		members[key] = raw
		return nil
	})
	return members, true
}

// HeadString is the string value of key among members, "" when it has
// none or another kind of value.
func HeadString(members map[string]json.RawMessage, key string) string {
	var v string
	if json.Unmarshal(members[key], &v) != nil {
		return ""
	}
	return v
}
