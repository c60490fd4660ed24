package zstdframe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Limits of the zstd encoding. They are part of format version 1.
const (
	// MaxContent is the largest decompressed frame a reader accepts; a
	// larger one (a decompression bomb, say) is corruption, never an
	// allocation. Writers keep frames far below it: Target plus at most one
	// row. It is 2*eventlog.MaxRowSize + Target (a test checks).
	MaxContent = 2*maxRowSize + Target
	// Target is the content size writers aim at when they split a flush,
	// or a compaction, into frames (a frame holds whole rows).
	Target = 4 << 20
	// LastTarget is what a whole-file rewrite (a conversion, a compaction,
	// an import) puts in its last frame at most, but for one row: Stat and
	// the stop facts read a log's tail by decoding its last frame, so a
	// small one keeps them cheap whatever the log's size.
	LastTarget = 256 << 10
	// MaxBytes bounds a compressed frame: content that does not compress
	// is stored in raw blocks of 128 KiB with 3-byte headers.
	MaxBytes = MaxContent + MaxContent/1024 + 64
	// MaxBlock is the largest block of a frame.
	MaxBlock = 128 << 10

	// maxRowSize is eventlog.MaxRowSize, which this package cannot import.
	maxRowSize = 16 << 20
)

// Magic numbers, as little-endian uint32.
const (
	// Magic starts a zstd data frame.
	Magic = 0xFD2FB528
	// SkippableMagic starts a skippable frame: the low 4 bits are free.
	SkippableMagic = 0x184D2A50
	// TailMagic is the magic of the skippable frame holding a tail
	// index (see AppendTail).
	TailMagic = 0x184D2A5E
)

var (
	// MagicBytes is Magic as it stands in a file.
	MagicBytes = []byte{0x28, 0xB5, 0x2F, 0xFD}
	// TailMagicBytes is TailMagic as it stands in a file.
	TailMagicBytes = []byte{0x5E, 0x2A, 0x4D, 0x18}
)

// ErrTooLarge is wrapped by the error of a decode of a frame whose content
// exceeds MaxContent.
var ErrTooLarge = errors.New("frame too large (a decompression bomb?)")

// Cut returns how many bytes of rows the next frame holds: all of
// them up to Target bytes; past it, the rows that fit in Target,
// or the first row alone when it is larger (rows without any '\n' are
// not split).
func Cut(rows []byte) int {
	if len(rows) <= Target {
		return len(rows)
	}
	if i := bytes.LastIndexByte(rows[:Target], '\n'); i >= 0 {
		return i + 1
	}
	if i := bytes.IndexByte(rows, '\n'); i >= 0 {
		return i + 1
	}
	return len(rows)
}

// ContentBound returns the most content the data frame at the start of b
// can decompress to: the sum of its blocks' sizes, a compressed block
// counting as the largest a block may be.
func ContentBound(b []byte) uint64 {
	if len(b) < 5 {
		return 0
	}
	fhd := b[4]
	single := fhd&0x20 != 0
	pos := 5 + [4]int{0, 1, 2, 4}[fhd&3] + [4]int{0, 2, 4, 8}[fhd>>6]
	if !single {
		pos++
	} else if fhd>>6 == 0 {
		pos++
	}
	var bound uint64
	for pos+3 <= len(b) {
		bh := uint32(b[pos]) | uint32(b[pos+1])<<8 | uint32(b[pos+2])<<16
		typ, size := (bh>>1)&3, int(bh>>3)
		pos += 3
		switch typ {
		case 0:
			bound += uint64(size)
			pos += size
		case 1:
			bound += uint64(size)
			pos++
		default:
			bound += MaxBlock
			pos += size
		}
		if bh&1 == 1 {
			break
		}
	}
	return bound
}

// ContentSize reads the Frame_Content_Size field, when present.
func ContentSize(b []byte) (uint64, bool) {
	if len(b) < 5 {
		return 0, false
	}
	fhd := b[4]
	single := fhd&0x20 != 0
	pos := 5 + [4]int{0, 1, 2, 4}[fhd&3]
	if !single {
		pos++
	}
	switch fhd >> 6 {
	case 0:
		if single && len(b) > pos {
			return uint64(b[pos]), true
		}
	case 1:
		if len(b) >= pos+2 {
			return uint64(binary.LittleEndian.Uint16(b[pos:])) + 256, true
		}
	case 2:
		if len(b) >= pos+4 {
			return uint64(binary.LittleEndian.Uint32(b[pos:])), true
		}
	case 3:
		if len(b) >= pos+8 {
			return binary.LittleEndian.Uint64(b[pos:]), true
		}
	}
	return 0, false
}

var errNotFrame = errors.New("not a zstd frame")

// ExtentOf walks the headers of the frame at the start of b, without
// decompressing it. It returns the frame's length n and whether it is a
// skippable frame; or need > 0 when b is too short to tell (at least need
// bytes are required to go on); or an error when b does not start a valid
// frame.
func ExtentOf(b []byte) (n int, skippable bool, need int, err error) {
	n64, skippable, need64, err := Walk(func(pos, k int64) []byte {
		if int64(len(b)) < pos+k {
			return nil
		}
		return b[pos : pos+k]
	})
	return int(n64), skippable, int(need64), err
}

// Walk walks a frame's headers through peek, which returns the k
// bytes at pos of the frame or nil when they are not available; need is
// then pos+k.
func Walk(peek func(pos, k int64) []byte) (n int64, skippable bool, need int64, err error) {
	b := peek(0, 4)
	if b == nil {
		return 0, false, 4, nil
	}
	magic := binary.LittleEndian.Uint32(b)
	if magic&0xFFFFFFF0 == SkippableMagic {
		if b = peek(4, 4); b == nil {
			return 0, true, 8, nil
		}
		return 8 + int64(binary.LittleEndian.Uint32(b)), true, 0, nil
	}
	if magic != Magic {
		return 0, false, 0, fmt.Errorf("%w: bad magic %#08x", errNotFrame, magic)
	}
	if b = peek(4, 1); b == nil {
		return 0, false, 5, nil
	}
	fhd := b[0]
	if fhd&0x08 != 0 {
		return 0, false, 0, fmt.Errorf("%w: reserved bit set in the frame header", errNotFrame)
	}
	single := fhd&0x20 != 0
	pos := int64(5 + [4]int{0, 1, 2, 4}[fhd&3])
	if !single {
		pos++
	}
	fcs := int64([4]int{0, 2, 4, 8}[fhd>>6])
	if fhd>>6 == 0 && single {
		fcs = 1
	}
	pos += fcs
	for {
		if b = peek(pos, 3); b == nil {
			return 0, false, pos + 3, nil
		}
		bh := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		last, typ, size := bh&1 == 1, (bh>>1)&3, int64(bh>>3)
		pos += 3
		if size > MaxBlock {
			return 0, false, 0, fmt.Errorf("%w: block of %d bytes", errNotFrame, size)
		}
		switch typ {
		case 0, 2:
			pos += size
		case 1:
			pos++
		default:
			return 0, false, 0, fmt.Errorf("%w: reserved block type", errNotFrame)
		}
		if pos > MaxBytes {
			return 0, false, 0, fmt.Errorf("%w: larger than %d bytes", errNotFrame, MaxBytes)
		}
		if last {
			break
		}
	}
	if fhd&0x04 != 0 {
		pos += 4
	}
	if pos > 0 && peek(pos-1, 1) == nil {
		return 0, false, pos, nil
	}
	return pos, false, 0, nil
}

// The tail frame: a skippable frame (magic TailMagic) that a writer appends
// when it closes, and a compaction after its last frame, so that Stat finds
// the last data frame by reading a fixed number of bytes from the end:
//
//	magic u32 | size u32 (= 40) | "SLTAIL01" | at u64 | lastOff u64 | lastLen u64 | nextSeq u64
//
// little endian; at is the tail frame's own offset. Readers skip it like
// any skippable frame. It is derived: when it is missing or stale (frames
// appended after it, by a writer that did not close), Stat walks the frame
// headers instead.
const (
	tailPayload = 40
	// TailSize is the size of a tail frame.
	TailSize = 8 + tailPayload
)

var tailID = []byte("SLTAIL01")

// AppendTail appends a tail frame to dst. at is the offset the frame
// will have in the file; lastOff and lastLen locate the last data frame
// before it; nextSeq is the seq that follows the log's last event.
func AppendTail(dst []byte, at, lastOff, lastLen, nextSeq int64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, TailMagic)
	dst = binary.LittleEndian.AppendUint32(dst, tailPayload)
	dst = append(dst, tailID...)
	for _, v := range []int64{at, lastOff, lastLen, nextSeq} {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
	}
	return dst
}

// ParseTail reports whether b (TailSize bytes) is a tail frame that
// stands at offset at, and the last data frame it names.
func ParseTail(b []byte, at int64) (lastOff, lastLen int64, ok bool) {
	if len(b) < TailSize || binary.LittleEndian.Uint32(b[0:]) != TailMagic ||
		binary.LittleEndian.Uint32(b[4:]) != tailPayload || !bytes.Equal(b[8:16], tailID) ||
		int64(binary.LittleEndian.Uint64(b[16:])) != at {
		return 0, 0, false
	}
	return int64(binary.LittleEndian.Uint64(b[24:])), int64(binary.LittleEndian.Uint64(b[32:])), true
}

// MagicAt reports whether b starts with a zstd or a skippable frame's
// magic.
func MagicAt(b []byte) bool {
	m := binary.LittleEndian.Uint32(b)
	return m == Magic || m&0xFFFFFFF0 == SkippableMagic
}

// Extent walks the headers of the frame at off, reading only headers;
// n < 0 when the input ends inside it.
func Extent(src io.ReaderAt, off, size int64) (n int64, skippable bool, err error) {
	var buf [8]byte
	n, skippable, need, err := Walk(func(pos, k int64) []byte {
		if off+pos+k > size {
			return nil
		}
		if _, err := src.ReadAt(buf[:k], off+pos); err != nil {
			return nil
		}
		return buf[:k]
	})
	if err != nil {
		return 0, false, err
	}
	if need > 0 || off+n > size { // a skippable frame's length is read, not walked
		return -1, skippable, nil
	}
	return n, skippable, nil
}

// Frame locates one zstd frame in a file.
type Frame struct {
	Offset    int64
	Len       int64
	Skippable bool
}

// Frames walks the frame headers of a zstd log without decompressing
// anything and returns its frames in order; it stops at the first bytes
// that do not form a complete frame and returns their offset as end (size
// when every byte belongs to a frame).
func Frames(src io.ReaderAt, size int64) (frames []Frame, end int64) {
	return FramesFrom(src, 0, size)
}

// FramesFrom is Frames from offset from.
func FramesFrom(src io.ReaderAt, from, size int64) (frames []Frame, end int64) {
	for end = from; end < size; {
		n, skippable, err := Extent(src, end, size)
		if err != nil || n <= 0 {
			return frames, end
		}
		frames = append(frames, Frame{Offset: end, Len: n, Skippable: skippable})
		end += n
	}
	return frames, end
}
