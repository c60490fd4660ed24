package seal

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sessionlog/sessionlog/eventlog"
)

// The sealed layout, version 1 (docs/format.md, "Sealed sessions"). These
// constants are part of it.
const (
	// Format is the clear header's "format".
	Format = "sessionlog-sealed"
	// Version is the sealed layout's version.
	Version = 1

	// The skippable-frame magics of the zstd layout.
	magicHeader = 0x184D2A5B // the clear header
	magicKey    = 0x184D2A5C // a key record
	magicSealed = 0x184D2A5D // a sealed frame

	nonceSize = 12
	tagSize   = 16
	// MaxRecordsPerKey bounds the records sealed under one data key: with
	// random 96-bit nonces the chance that two of them collide stays
	// below 2^-32. A writer rotates the key before it (Sealer.Full).
	MaxRecordsPerKey = 1 << 32
	// maxRecord bounds a record's encoded size: a sealed row of the
	// largest size, base64-encoded, or a sealed frame of the largest
	// compressed size.
	maxRecord = 4*(eventlog.MaxRowSize+nonceSize+tagSize)/3 + 64
	// maxFrameRecord bounds a zstd-layout record's payload.
	maxFrameRecord = eventlog.MaxFrameContent + eventlog.MaxFrameContent/1024 + 64 + 4 + nonceSize + tagSize
)

// Encoding is the physical encoding a sealed file wraps.
type Encoding byte

const (
	// Raw: one JSON line per record (a sealed row, a key record).
	Raw Encoding = 'r'
	// Zstd: one skippable frame per record (a sealed zstd frame, a key
	// record).
	Zstd Encoding = 'z'
)

func (e Encoding) String() string {
	if e == Zstd {
		return "zstd"
	}
	return "raw"
}

// ClearHeader is what a sealed file shows in clear: what a store needs to
// name, list and link the session without a key. Labels are not in it:
// they are in the sealed header row.
type ClearHeader struct {
	Format    string           `json:"format"`
	Version   int64            `json:"version"`
	ID        string           `json:"id"`
	CreatedAt int64            `json:"createdAt"`
	Parent    *eventlog.Parent `json:"parent,omitempty"`
}

// ClearOf returns the clear part of a session's header.
func ClearOf(h eventlog.Header) ClearHeader {
	return ClearHeader{Format: Format, Version: Version, ID: h.ID, CreatedAt: h.CreatedAt, Parent: h.Parent}
}

// matches reports whether the sealed header row h agrees with the clear
// header: a clear header that was changed must not mislead a store.
func (c ClearHeader) matches(h eventlog.Header) bool {
	if c.ID != h.ID || c.CreatedAt != h.CreatedAt || (c.Parent == nil) != (h.Parent == nil) {
		return false
	}
	return c.Parent == nil || *c.Parent == *h.Parent
}

// encode returns the clear header's JSON.
func (c ClearHeader) encode() ([]byte, error) {
	h := eventlog.Header{Format: eventlog.FormatName, Version: eventlog.Version, ID: c.ID, CreatedAt: c.CreatedAt, Parent: c.Parent}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("%w: sealed header: %v", eventlog.ErrInvalidEvent, err)
	}
	c.Format, c.Version = Format, Version
	return json.Marshal(c)
}

// decodeClearHeader decodes a clear header (raw: the first line, zstd:
// the first frame's payload).
func decodeClearHeader(b []byte) (ClearHeader, error) {
	var c ClearHeader
	probe := eventlog.ExactKeys(b, "format", "version", "id", "createdAt", "parent")
	if err := json.Unmarshal(probe, &c); err != nil {
		return c, &eventlog.CorruptError{Offset: 0, Seq: -1, Reason: "sealed header is not a JSON object: " + err.Error()}
	}
	if c.Format != Format {
		return c, &eventlog.CorruptError{Offset: 0, Seq: -1, Reason: fmt.Sprintf("not a sealed session log: format %q", c.Format)}
	}
	if c.Version != Version {
		return c, &eventlog.VersionError{Found: c.Version, Supported: []int{Version}}
	}
	var has struct {
		CreatedAt json.RawMessage `json:"createdAt"`
	}
	if json.Unmarshal(probe, &has); len(has.CreatedAt) == 0 {
		return c, &eventlog.CorruptError{Offset: 0, Seq: -1, Reason: "bad sealed header: no createdAt"}
	}
	h := eventlog.Header{Format: eventlog.FormatName, Version: eventlog.Version, ID: c.ID, CreatedAt: c.CreatedAt, Parent: c.Parent}
	if err := h.Validate(); err != nil {
		return c, &eventlog.CorruptError{Offset: 0, Seq: -1, Reason: "bad sealed header: " + err.Error()}
	}
	return c, nil
}

// rawStart is how a raw sealed file starts: the clear header's first
// member, as AppendClearHeader writes it (a clear log's header, which
// may hold any label, is never told by a member found further on).
const rawStart = `{"format":"` + Format + `"`

// IsSealed reports whether b, the first bytes of a file (at least 30, or
// 4 for zstd), start a sealed log: a zstd one's header frame, or a raw
// one's clear header, which starts with {"format":"sessionlog-sealed".
func IsSealed(b []byte) (Encoding, bool) {
	if len(b) >= 4 && binary.LittleEndian.Uint32(b) == magicHeader {
		return Zstd, true
	}
	return Raw, bytes.HasPrefix(b, []byte(rawStart))
}

// AppendClearHeader appends the clear header record of a sealed file.
func AppendClearHeader(dst []byte, enc Encoding, c ClearHeader) ([]byte, error) {
	b, err := c.encode()
	if err != nil {
		return dst, err
	}
	if enc == Zstd {
		return appendFrame(dst, magicHeader, b), nil
	}
	return append(append(dst, b...), '\n'), nil
}

func appendFrame(dst []byte, magic uint32, payload ...[]byte) []byte {
	n := 0
	for _, p := range payload {
		n += len(p)
	}
	dst = binary.LittleEndian.AppendUint32(dst, magic)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	for _, p := range payload {
		dst = append(dst, p...)
	}
	return dst
}

// Envelope is a key record: a data key wrapped for some recipients (an
// age file), or the same-length remains of one that was shredded.
type Envelope struct {
	Key      uint32
	Age      []byte // the age file; nil when shredded
	Shredded bool
	// Offset and Len locate the record in the file (its '\n' excluded):
	// what Shred overwrites.
	Offset, Len int64
}

// AppendKeyRecord appends the key record of an envelope (an age file from
// Wrap) of data key id.
func AppendKeyRecord(dst []byte, enc Encoding, id uint32, ageFile []byte) []byte {
	if enc == Zstd {
		var head [5]byte
		head[0] = 'k'
		binary.BigEndian.PutUint32(head[1:], id)
		return appendFrame(dst, magicKey, head[:], ageFile)
	}
	dst = append(dst, `{"key":`...)
	dst = strconv.AppendUint(dst, uint64(id), 10)
	dst = append(dst, `,"age":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, ageFile)
	return append(dst, "\"}\n"...)
}

// Shred returns the bytes that replace a key record (rec: as Envelope
// locates it) when it is shredded: as long as it, still a well-formed
// record, holding nothing of the key.
func Shred(enc Encoding, rec []byte) ([]byte, error) {
	out := make([]byte, len(rec))
	if enc == Zstd {
		if len(rec) < 13 || binary.LittleEndian.Uint32(rec) != magicKey {
			return nil, fmt.Errorf("seal: not a key record")
		}
		copy(out, rec[:8])
		out[8] = 's'
		copy(out[9:13], rec[9:13])
		return out, nil
	}
	i := bytes.Index(rec, []byte(`,"age":"`))
	if !bytes.HasPrefix(rec, []byte(`{"key":`)) || i < 0 || len(rec)-i-len(`,"age":"`)-2 < 2 {
		return nil, fmt.Errorf("seal: not a key record")
	}
	n := copy(out, rec[:i])
	n += copy(out[n:], `,"shred":"`)
	for ; n < len(out)-2; n++ {
		out[n] = '0'
	}
	copy(out[n:], `"}`)
	return out, nil
}

// aad is the additional data a record is authenticated with: the layout,
// the session, the encoding, the key's number and whether it is the
// header row, so that no record can be moved to another session, file
// layout or key, nor stand in for the header.
func aad(dst []byte, session string, enc Encoding, key uint32, header bool) []byte {
	dst = append(dst, "sessionlog-sealed/1\x00"...)
	dst = append(dst, session...)
	dst = append(dst, byte(enc))
	dst = binary.BigEndian.AppendUint32(dst, key)
	if header {
		return append(dst, 'h')
	}
	return append(dst, 'd')
}
