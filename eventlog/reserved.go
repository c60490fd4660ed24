package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// The event types the library itself understands (docs/format.md §7). They are part
// of the format: a writer validates them on append.
const (
	// TypeCheckpoint covers every event before it with a log digest.
	TypeCheckpoint = "checkpoint"
	// TypeRollback makes every projection's state return to its state
	// right after an earlier event.
	TypeRollback = "rollback"
)

// CheckpointData is the data of a checkpoint event.
type CheckpointData struct {
	// Log is the log digest of the events before the checkpoint.
	Log string `json:"log"`
	// State optionally names a projection and the digest of its state.
	State *StateRef `json:"state,omitempty"`
	// Label names the checkpoint, for rollback --checkpoint.
	Label string `json:"label,omitempty"`
}

// StateRef is a checkpoint's state digest.
type StateRef struct {
	Projection string `json:"projection"` // name/vN, e.g. "agent/v1"
	Digest     string `json:"digest"`     // "sha256:…" of the marshalled state
}

// RollbackData is the data of a rollback event.
type RollbackData struct {
	// To is the seq whose state every projection returns to.
	To     int64  `json:"to"`
	Label  string `json:"label,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ParseCheckpoint decodes and checks a checkpoint's data: a log digest of
// the form sha256:<64 hex>, and a well-formed state reference if present.
func ParseCheckpoint(data json.RawMessage) (CheckpointData, error) {
	var c CheckpointData
	if err := strictUnmarshal(data, &c, "log", "state", "label"); err != nil {
		return c, invalidf("checkpoint data: %v", err)
	}
	if c.State != nil {
		// The state's keys are exact too.
		var raw struct {
			State json.RawMessage `json:"state"`
		}
		json.Unmarshal(ExactKeys(data, "state"), &raw)
		c.State = new(StateRef)
		if err := json.Unmarshal(ExactKeys(raw.State, "projection", "digest"), c.State); err != nil {
			return c, invalidf("checkpoint data: state: %v", err)
		}
	}
	if !validDigest(c.Log) {
		return c, invalidf("checkpoint log digest %q is not sha256:<64 hex digits>", c.Log)
	}
	if c.State != nil && (c.State.Projection == "" || !validDigest(c.State.Digest)) {
		return c, invalidf("checkpoint state must name a projection and hold a sha256 digest")
	}
	return c, nil
}

// ParseRollback decodes and checks a rollback's data: "to" an integer
// >= 0. That it is lower than the rollback's own seq is the writer's check.
func ParseRollback(data json.RawMessage) (RollbackData, error) {
	var r RollbackData
	if err := strictUnmarshal(data, &r, "to", "label", "reason"); err != nil {
		return r, invalidf("rollback data: %v", err)
	}
	var probe struct {
		To json.RawMessage `json:"to"`
	}
	json.Unmarshal(ExactKeys(data, "to"), &probe)
	if _, _, err := scanUint(bytes.TrimSpace(probe.To), 0); err != nil || len(bytes.TrimSpace(probe.To)) == 0 {
		return r, invalidf("rollback \"to\" must be an integer >= 0")
	}
	return r, nil
}

func strictUnmarshal(data json.RawMessage, v any, known ...string) error {
	if len(data) == 0 || data[0] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	return json.Unmarshal(ExactKeys(data, known...), v)
}

// validDigest reports whether s is "sha256:" and 64 lower-case hex digits.
func validDigest(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Digest is the running log digest of docs/format.md §6: sha256 over canon(e)+"\n"
// of every event of the logical log, in order. Writers keep one as they
// append and verifiers recompute one from the file, with this same code.
// Its state can be saved (MarshalBinary) and resumed. A Digest is not safe
// for concurrent use.
type Digest struct {
	h    hash.Hash
	next int64 // the seq of the next event it expects
	buf  []byte
}

// NewDigest returns the digest of an empty log.
func NewDigest() *Digest { return &Digest{h: sha256.New()} }

// Add hashes e, which must be the next event of the log.
func (d *Digest) Add(e Event) {
	d.buf = append(AppendCanon(d.buf[:0], e), '\n')
	d.h.Write(d.buf)
	d.next = e.Seq + 1
}

// AddTail hashes the event with seq seq, the next one of the log, given
// tail, the bytes of its canon(e) after the seq (,"type":…}): the same as
// Add, without encoding the event again.
func (d *Digest) AddTail(seq int64, tail []byte) {
	d.buf = strconv.AppendInt(append(d.buf[:0], `{"seq":`...), seq, 10)
	d.h.Write(d.buf)
	d.h.Write(tail)
	d.h.Write(newline)
	d.next = seq + 1
}

var newline = []byte{'\n'}

// Next returns the seq of the next event the digest expects: the events
// it covers are 0..Next-1.
func (d *Digest) Next() int64 { return d.next }

// String returns "sha256:" + hex of the digest of the events so far.
func (d *Digest) String() string {
	return "sha256:" + hex.EncodeToString(d.h.Sum(nil))
}

// Clone returns an independent copy.
func (d *Digest) Clone() *Digest {
	state, _ := d.h.(encoding.BinaryMarshaler).MarshalBinary()
	c := NewDigest()
	c.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state)
	c.next = d.next
	return c
}

// MarshalBinary saves the digest's state (the sha256 state and the next
// seq).
func (d *Digest) MarshalBinary() ([]byte, error) {
	state, err := d.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Next  int64  `json:"next"`
		State []byte `json:"sha256"`
	}{d.next, state})
}

// UnmarshalBinary restores a state saved by MarshalBinary.
func (d *Digest) UnmarshalBinary(b []byte) error {
	var s struct {
		Next  int64  `json:"next"`
		State []byte `json:"sha256"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s.Next < 0 {
		return fmt.Errorf("eventlog: digest state: next seq %d is negative", s.Next)
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.State); err != nil {
		return err
	}
	d.h, d.next = h, s.Next
	return nil
}
