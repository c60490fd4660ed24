package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Parent modes (docs/format.md §3).
const (
	// ModeFork: the logical log is the parent's events 0..Seq followed by
	// this file's rows, whose first seq is Seq+1.
	ModeFork = "fork"
	// ModeChild: a sub-session spawned by the parent at its event Seq;
	// nothing is inherited and rows start at seq 0.
	ModeChild = "child"
)

// Header is the first row of every log file.
type Header struct {
	Format    string            `json:"format"`
	Version   int64             `json:"version"`
	ID        string            `json:"id"`
	CreatedAt int64             `json:"createdAt"` // Unix milliseconds
	Parent    *Parent           `json:"parent,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Parent links a session to the session it was forked or spawned from.
type Parent struct {
	ID   string `json:"id"`
	Seq  int64  `json:"seq"`
	Mode string `json:"mode"`
	Call string `json:"call,omitempty"` // the delegating tool call, for a child
}

// String says where the session comes from in words: "fork of ID at seq
// S", or "child of ID at seq S (call C)".
func (p Parent) String() string {
	s := fmt.Sprintf("%s of %s at seq %d", p.Mode, p.ID, p.Seq)
	if p.Call != "" {
		s += " (call " + p.Call + ")"
	}
	return s
}

// FirstSeq is the seq of the first row of the file: parent.seq+1 for a
// fork, else 0.
func (h Header) FirstSeq() int64 {
	if h.Parent != nil && h.Parent.Mode == ModeFork {
		return h.Parent.Seq + 1
	}
	return 0
}

// Validate checks the header's fields: format, version, a valid ID, a
// createdAt >= 0, a well-formed parent. A wrong version gives a
// *VersionError; anything else a plain error.
func (h Header) Validate() error {
	if h.Format != FormatName {
		return fmt.Errorf("format is %q, not %q", h.Format, FormatName)
	}
	if h.Version != Version {
		return &VersionError{Found: h.Version, Supported: supportedVersions()}
	}
	if !ValidID(h.ID) {
		return fmt.Errorf("id %q is not an upper-case ULID", h.ID)
	}
	if h.CreatedAt < 0 {
		return fmt.Errorf("createdAt %d is negative", h.CreatedAt)
	}
	if p := h.Parent; p != nil {
		if !ValidID(p.ID) {
			return fmt.Errorf("parent id %q is not an upper-case ULID", p.ID)
		}
		if p.Seq < 0 {
			return fmt.Errorf("parent seq %d is negative", p.Seq)
		}
		if p.Mode != ModeFork && p.Mode != ModeChild {
			return fmt.Errorf("parent mode %q is neither %q nor %q", p.Mode, ModeFork, ModeChild)
		}
		if p.Mode == ModeFork && p.Seq >= 1<<62 {
			return fmt.Errorf("parent seq %d out of range", p.Seq)
		}
		if !utf8.ValidString(p.Call) {
			return fmt.Errorf("parent call %q is not UTF-8", p.Call)
		}
	}
	for k, v := range h.Labels {
		// encoding/json would replace the bad bytes silently: the header
		// would not hold the labels given.
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("label %q=%q is not UTF-8", k, v)
		}
	}
	return nil
}

// EncodeHeader returns the header row, without '\n'. It validates first.
func EncodeHeader(h Header) ([]byte, error) {
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrInvalidEvent, err)
	}
	n := 0
	for k, v := range h.Labels {
		n += len(k) + len(v)
	}
	if n > MaxRowSize {
		// Too large however it is quoted: no need to encode it to say so.
		return nil, fmt.Errorf("%w: header labels of %d bytes (the limit of a header row is %d)", ErrTooLarge, n, MaxRowSize)
	}
	b, err := json.Marshal(h)
	if err == nil && len(b) > MaxRowSize {
		// decodeHeader would refuse it: a session created with it could
		// never be opened.
		return nil, fmt.Errorf("%w: header of %d bytes (labels too large; the limit is %d)", ErrTooLarge, len(b), MaxRowSize)
	}
	return b, err
}

// decodeHeader decodes a header row (without '\n'). Unknown keys are
// ignored; a wrong version gives a *VersionError, anything else that is
// wrong a *CorruptError at offset 0.
func decodeHeader(line []byte) (Header, error) {
	var h Header
	if len(line) > MaxRowSize {
		return h, &CorruptError{Seq: -1, Reason: "header row exceeds the row size limit"}
	}
	if !utf8.Valid(line) {
		// JSON text is UTF-8 (RFC 8259); encoding/json would read the bad
		// bytes as U+FFFD.
		return h, &CorruptError{Seq: -1, Reason: "header is not UTF-8"}
	}
	// Keys are exact (encoding/json would read "ID" as "id"); unknown
	// ones are ignored.
	line = ExactKeys(line, "format", "version", "id", "createdAt", "parent", "labels")
	var probe struct {
		Format    *string         `json:"format"`
		Version   json.RawMessage `json:"version"`
		CreatedAt json.RawMessage `json:"createdAt"`
		Parent    json.RawMessage `json:"parent"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return h, &CorruptError{Seq: -1, Reason: "header is not a JSON object: " + err.Error()}
	}
	if probe.Format == nil || *probe.Format != FormatName {
		return h, &CorruptError{Seq: -1, Reason: "not a sessionlog file: header has no \"format\":\"sessionlog\""}
	}
	if v, _, err := scanUint(bytes.TrimSpace(probe.Version), 0); err != nil || v != Version {
		if err != nil {
			return h, &CorruptError{Seq: -1, Reason: "header version is not an integer"}
		}
		return h, &VersionError{Found: v, Supported: supportedVersions()}
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, &CorruptError{Seq: -1, Reason: "bad header: " + err.Error()}
	}
	if len(probe.CreatedAt) == 0 {
		return h, &CorruptError{Seq: -1, Reason: "bad header: no createdAt"}
	}
	if len(probe.Parent) > 0 && !isNullJSON(probe.Parent) {
		parent := ExactKeys(probe.Parent, "id", "seq", "mode", "call")
		var pp struct {
			ID   json.RawMessage `json:"id"`
			Seq  json.RawMessage `json:"seq"`
			Mode json.RawMessage `json:"mode"`
		}
		h.Parent = new(Parent)
		if err := json.Unmarshal(parent, &pp); err != nil {
			return h, &CorruptError{Seq: -1, Reason: "bad header: parent: " + err.Error()}
		}
		if len(pp.ID) == 0 || len(pp.Seq) == 0 || len(pp.Mode) == 0 {
			return h, &CorruptError{Seq: -1, Reason: "bad header: parent needs id, seq and mode"}
		}
		if err := json.Unmarshal(parent, h.Parent); err != nil {
			return h, &CorruptError{Seq: -1, Reason: "bad header: parent: " + err.Error()}
		}
	}
	if err := h.Validate(); err != nil {
		return h, &CorruptError{Seq: -1, Reason: "bad header: " + err.Error()}
	}
	return h, nil
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var crockfordChar = func() (t [256]bool) {
	for i := 0; i < len(crockford); i++ {
		t[crockford[i]] = true
	}
	return t
}()

// ValidID reports whether id is a session ID: a ULID of 26 upper-case
// Crockford base32 characters whose value fits 128 bits.
func ValidID(id string) bool {
	if len(id) != 26 || id[0] > '7' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !crockfordChar[id[i]] {
			return false
		}
	}
	return true
}

// isNullJSON reports whether b is the JSON literal null.
func isNullJSON(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }
