package eventlog

import (
	"encoding/json"

	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// SetMaxRowSize lowers the row size limit an Encoder packs to, so that tests
// can exercise the split of packed runs with small rows.
func SetMaxRowSize(enc *Encoder, n int) { enc.maxSize = n }

// MaxRowSizeOf is the row size limit an Encoder packs to.
func MaxRowSizeOf(enc *Encoder) int { return enc.maxSize }

// SetReaderMaxRowSize lowers the row size limit a Reader enforces, so that
// tests of lines past it need not build lines of MaxRowSize bytes.
func SetReaderMaxRowSize(r *Reader, n int) { r.maxRow = n }

// TailFrameAt exposes tailFrameAt: whether b is a tail frame standing at
// offset at, and the data frame it names.
var TailFrameAt = zstdframe.ParseTail

// Packable exposes packable: whether an event's data may sit in a packed
// row.
var Packable = packable

// IntLen exposes intLen: the number of characters of a decimal int64.
var IntLen = intLen

// SetMinAhead sets the smallest compressed frame a zstd Reader decodes
// ahead: 1 decodes every buffered frame ahead, math.MaxInt none.
func SetMinAhead(r *Reader, n int) { r.zs.minAhead = n }

// SetMaxAhead sets how many frames a zstd Reader decodes ahead at most
// (tests only).
func SetMaxAhead(r *Reader, n int) { r.zs.maxAhead = n }

// CheckReserved is ParseReserved's verdict alone.
func CheckReserved(e Event) *CorruptError {
	_, err := ParseReserved(e)
	return err
}

// DecodeHeader exposes decodeHeader: the header of one row.
var DecodeHeader = decodeHeader

// ValidDigest exposes validDigest.
var ValidDigest = validDigest

// MaxTypeLen exposes maxTypeLen, the longest event type.
const MaxTypeLen = maxTypeLen

// CompactData validates data as one JSON value and returns it with
// insignificant whitespace removed; escapes are left as they were. Data that
// is already compact is returned as is, without a copy. Nil stays nil.
func CompactData(data json.RawMessage) (json.RawMessage, error) {
	if data == nil {
		return nil, nil
	}
	compact, err := scanJSON(data)
	if err != nil {
		return nil, invalidf("data is not valid JSON: %v", err)
	}
	return compacted(data, compact), nil
}

// SupportedVersions exposes supportedVersions.
var SupportedVersions = supportedVersions
