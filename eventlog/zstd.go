package eventlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// maxBufferedSkip is the largest skippable frame a reader buffers whole;
// a larger one (another tool's seek table, say) is read past.
const maxBufferedSkip = 1 << 20

// ZstdCodec compresses rows into zstd frames and decompresses them. One
// codec serves any number of writers and readers: it is safe for
// concurrent use, and its encoder and decoder are reused, so a small flush
// does not pay for a new encoder. Close waits for the decodes under way
// (a Reader may decode its next frame on a goroutine of its own: see
// NewZstdReader); a decode after Close fails.
type ZstdCodec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder

	mu     sync.RWMutex // held shared by each decode, exclusively by Close
	closed bool
}

// NewZstdCodec returns a codec that compresses at the given zstd level
// (1 fastest … 22 best; 0 means the default, a fast level).
func NewZstdCodec(level int) (*ZstdCodec, error) {
	l := zstd.SpeedFastest
	if level > 0 {
		l = zstd.EncoderLevelFromZstd(level)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderCRC(true),
		zstd.WithEncoderConcurrency(2), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, fmt.Errorf("eventlog: zstd encoder: %w", err)
	}
	// A decoder per frame a Reader decodes ahead, and one for the frame
	// it decodes in line.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(framesAhead()+1),
		zstd.WithDecoderMaxMemory(zstdframe.MaxContent), zstd.WithDecoderMaxWindow(zstdframe.MaxContent),
		zstd.WithDecodeAllCapLimit(true)) // the output is bounded by cap(dst): see decodeFrame
	if err != nil {
		enc.Close()
		return nil, fmt.Errorf("eventlog: zstd decoder: %w", err)
	}
	return &ZstdCodec{enc: enc, dec: dec}, nil
}

// Close releases the codec's resources, once the decodes under way end.
func (c *ZstdCodec) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.enc.Close()
	c.dec.Close()
}

// errCodecClosed is the error of a decode after the codec's Close.
var errCodecClosed = errors.New("zstd codec closed")

// AppendFrames appends rows (whole rows, each ending in '\n') to dst as
// zstd frames with content checksums: one frame, or several of about
// zstdframe.Target bytes of content each, split at row boundaries (zstdframe.Cut).
// last is the index in out where the last frame starts.
//
// A writer that must emit one frame per flush (docs/format.md §5) gives it one
// zstdframe.Cut of rows at a time and makes each frame durable before the next.
func (c *ZstdCodec) AppendFrames(dst, rows []byte) (out []byte, last int) {
	last = len(dst)
	for len(rows) > 0 {
		last = len(dst)
		n := zstdframe.Cut(rows)
		dst = c.enc.EncodeAll(rows[:n], dst)
		rows = rows[n:]
	}
	return dst, last
}

// decodeFrame decompresses one frame into dst[:0]. The decoder writes no
// more than cap(dst) bytes, and dst is given the capacity the frame can
// need: its declared content size, bounded by what its blocks can hold and
// by zstdframe.MaxContent. So a frame that would decompress to more (a bomb) is
// refused after allocating at most about zstdframe.MaxContent, and nothing at
// all when it declares its size.
//
// A frame over the limit, declared or found decoding, fails with
// zstdframe.ErrTooLarge: no writer writes one, and no crash leaves one (a
// frame's header is written as a whole, and pages a power cut left
// unwritten read as zeros, which decode to nothing), so it is corruption
// wherever it is, never a torn tail.
func (c *ZstdCodec) decodeFrame(frame, dst []byte) ([]byte, error) {
	limit := zstdframe.ContentBound(frame)
	size, declared := zstdframe.ContentSize(frame)
	if declared {
		if size > zstdframe.MaxContent {
			return nil, fmt.Errorf("%w: its content of %d bytes exceeds the limit of %d", zstdframe.ErrTooLarge, size, zstdframe.MaxContent)
		}
		limit = min(limit, size)
	}
	unbounded := limit >= zstdframe.MaxContent
	if unbounded {
		// The content may be larger than the limit: leave room for the
		// block that crosses it, which then fails the decoder's size
		// check instead of growing the buffer.
		limit = zstdframe.MaxContent + zstdframe.MaxBlock
	}
	if uint64(cap(dst)) < limit {
		// Room for a frame a little larger than this one too, up to
		// zstdframe.Target: a Reader decodes its next frames into the buffers of
		// the last ones, which then need no new one.
		dst = make([]byte, 0, max(limit, min(zstdframe.Target, 2*limit)))
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return dst[:0], errCodecClosed
	}
	out, err := c.dec.DecodeAll(frame, dst[:0])
	if err != nil && !declared && unbounded && errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return out, fmt.Errorf("%w: its content exceeds the limit of %d", zstdframe.ErrTooLarge, zstdframe.MaxContent)
	}
	return out, err
}

// DecodeFrame decompresses one whole data frame into dst[:0] with the
// limits a Reader applies (zstdframe.MaxContent: a larger frame is refused
// without allocating it). It is for containers that hold zstd frames of
// a log in their own framing (a sealed log).
func (c *ZstdCodec) DecodeFrame(frame, dst []byte) ([]byte, error) {
	return c.decodeFrame(frame, dst)
}

// zstdState is the part of a Reader that reads zstd frames.
type zstdState struct {
	codec    *ZstdCodec
	content  []byte // the current frame's rows
	cpos     int    // next row in content
	frameOff int64  // file offset of the current frame
	frameEnd int64  // file offset just past it
	frameSeq int64  // the seq its first row should hold
	endSeq   int64  // the seq that follows the last complete frame
	framed   bool   // a data frame was read: frameOff and frameEnd locate it
	// skipHeader: the Reader starts at offset 0 with WithStart, so the
	// first data frame's first row is the header, not an event.
	skipHeader bool

	// Frames decoded ahead (see prefetch), in file order, in jobs: each
	// job on a goroutine of its own, which owns it until it closes done.
	ahead      []*aheadJob
	aheadBytes int      // content bytes the frames in ahead may decode to
	aheadEnd   int64    // file offset up to which frames were looked at for prefetch
	spares     [][]byte // content buffers free for a decode
	spareBytes int      // their capacity
	jobBufs    [][]byte // buffers free for the copies of a job's frames
	maxAhead   int      // at most this many jobs ahead (tests change it)
	minAhead   int      // the smallest frame decoded ahead (tests change it)
	latch      *latchReader
}

// aheadJob is a run of data frames being decoded ahead of the rows that
// need them, in order: copies of their bytes, where they stand, and their
// results, set before done is closed.
type aheadJob struct {
	buf     []byte // the frames' bytes, end to end
	frames  []aheadFrame
	results []decodedFrame
	next    int // the next frame to be taken
	done    chan struct{}
}

// aheadFrame is a frame of an aheadJob: its offset and length in the file,
// where its bytes start in the job's buf, a buffer for its content and
// what it may decode to (frameContentBound).
type aheadFrame struct {
	off     int64
	n, at   int
	dst     []byte
	content int
}

// frameContentBound is what the data frame b may decode to: its declared
// content size, else what its blocks can hold, at most zstdframe.MaxContent.
func frameContentBound(b []byte) int {
	if size, ok := zstdframe.ContentSize(b); ok {
		return int(min(size, zstdframe.MaxContent))
	}
	return int(min(zstdframe.ContentBound(b), zstdframe.MaxContent))
}

// decodedFrame is the result of decodeFrame.
type decodedFrame struct {
	content []byte
	err     error
}

// Decoding ahead: a frame per flush is small (a turn is about 10 KB
// compressed), so one frame ahead kept a second core busy only now and
// then; frames are decoded ahead in jobs of several, in file order, within
// a bound of bytes, a goroutine and a hand-over per job rather than per
// frame.
const (
	// minAhead is the smallest compressed frame decoded ahead.
	minAhead = 2 << 10
	// aheadBuffered is how many compressed bytes past the current frame
	// the Reader reads ahead to find frames to decode.
	aheadBuffered = 1 << 20
	// aheadMaxBytes bounds what the frames being decoded ahead decode to
	// (their declared content sizes, else what their blocks can hold), but
	// for one: a frame of a rewrite holds up to zstdframe.Target, and one ahead
	// overlaps its decode with its rows' parse.
	aheadMaxBytes = 4 << 20
	// A job ends at aheadJobFrames frames or aheadJobBytes of content.
	aheadJobFrames = 32
	aheadJobBytes  = 512 << 10
	// spareMaxBytes bounds the idle content buffers a Reader keeps (one,
	// whatever its size).
	spareMaxBytes = 1 << 20
)

// framesAhead is how many jobs a Reader decodes ahead at once: one per
// core beyond the one parsing the rows, at least two, at most four.
func framesAhead() int { return min(max(runtime.GOMAXPROCS(0), 2), 4) }

// latchReader is the source of a zstd Reader: once a read fails, every
// later read fails the same way without reading, so that an error met
// reading ahead (prefetch) surfaces where the rows before it end, as it
// would without reading ahead.
type latchReader struct {
	r   io.Reader
	err error
}

func (l *latchReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		l.err = err
	}
	return n, err
}

// prefetch starts decoding the data frames that follow the read position,
// in jobs of several frames each on a goroutine of its own, up to maxAhead
// jobs and aheadMaxBytes, reading up to aheadBuffered bytes ahead to find
// them. It decides nothing: decodeAt takes a result in place of its own
// decode of the same bytes, so what a read finds (rows, torn tails,
// corruption) is the same either way; an I/O error met reading ahead is
// latched and surfaces when the read reaches it. Frames under minAhead or
// over zstdframe.Target are decoded in line. A goroutine ends with its decodes,
// even if the Reader is dropped.
func (r *Reader) prefetch() {
	zs := r.zs
	for len(zs.ahead) < zs.maxAhead {
		j := r.collectJob()
		if j == nil {
			return
		}
		zs.ahead = append(zs.ahead, j)
		codec := zs.codec
		go func() {
			for i, f := range j.frames {
				content, err := codec.decodeFrame(j.buf[f.at:f.at+f.n], f.dst)
				j.results[i] = decodedFrame{content, err}
			}
			close(j.done)
		}()
	}
}

// collectJob gathers the next frames to decode ahead into a job, reading
// ahead as needed; nil when there are none (yet).
func (r *Reader) collectJob() *aheadJob {
	zs := r.zs
	var j *aheadJob
	content := 0
	for j == nil || len(j.frames) < aheadJobFrames && content < aheadJobBytes {
		pos := max(zs.aheadEnd, r.bufOff)
		b := r.buf[r.r+int(pos-r.bufOff) : r.w]
		n, skippable, need, err := zstdframe.ExtentOf(b)
		if err != nil {
			break // damage: the read in order finds what it is
		}
		if need != 0 || n > len(b) {
			if j != nil || r.eof || zs.latch.err != nil || r.w-r.r >= aheadBuffered || (skippable && n > maxBufferedSkip) {
				break // a job goes with the frames buffered
			}
			if r.fill() != nil {
				break // latched: surfaces in order
			}
			continue
		}
		if skippable || n < zs.minAhead || n > zstdframe.Target {
			zs.aheadEnd = pos + int64(n)
			continue
		}
		bound := frameContentBound(b[:n])
		if zs.aheadBytes > 0 && zs.aheadBytes+bound > aheadMaxBytes {
			break // later, once frames ahead are taken
		}
		zs.aheadEnd = pos + int64(n)
		if j == nil {
			j = &aheadJob{done: make(chan struct{})}
			if k := len(zs.jobBufs); k > 0 {
				j.buf, zs.jobBufs = zs.jobBufs[k-1][:0], zs.jobBufs[:k-1]
			}
		}
		f := aheadFrame{off: pos, n: n, at: len(j.buf), content: bound, dst: zs.takeSpare(bound)}
		j.buf = append(j.buf, b[:n]...)
		j.frames = append(j.frames, f)
		content += f.content
		zs.aheadBytes += f.content
	}
	if j != nil {
		j.results = make([]decodedFrame, len(j.frames))
	}
	return j
}

// decodeAt decodes frame, the n bytes at file offset off, into a content
// buffer: the result decoded ahead when it is this frame's, else now.
// Results of frames before off (the read went another way: damage) are
// dropped.
func (r *Reader) decodeAt(frame []byte, off int64, n int) ([]byte, error) {
	zs := r.zs
	for len(zs.ahead) > 0 {
		j := zs.ahead[0]
		if j.frames[j.next].off > off {
			break // decoded ahead, but later
		}
		<-j.done
		for j.next < len(j.frames) && (j.frames[j.next].off < off || j.frames[j.next].off == off && j.frames[j.next].n != n) {
			zs.takeAhead(j)
			zs.spare(j.results[j.next-1].content)
		}
		if j.next < len(j.frames) && j.frames[j.next].off == off {
			d := zs.takeAhead(j)
			if d.err == nil {
				zs.spare(zs.content) // its rows are all read
			} else {
				zs.spare(d.content) // the current content stays the reader's
			}
			return d.content, d.err
		}
	}
	content, err := zs.codec.decodeFrame(frame, zs.takeSpare(frameContentBound(frame)))
	if err == nil {
		zs.spare(zs.content)
	}
	return content, err
}

// takeAhead returns the result of the head job's next frame, and drops the
// job once every frame of it is taken. The job is done.
func (zs *zstdState) takeAhead(j *aheadJob) decodedFrame {
	d := j.results[j.next]
	zs.aheadBytes -= j.frames[j.next].content
	j.next++
	if j.next == len(j.frames) {
		zs.ahead[0] = nil
		zs.ahead = zs.ahead[1:]
		if len(zs.jobBufs) < zs.maxAhead {
			zs.jobBufs = append(zs.jobBufs, j.buf)
		}
	}
	return d
}

// spare keeps a content buffer for a later decode, while the idle ones
// hold at most spareMaxBytes (but one always), so that frames' buffers are
// seldom allocated. When they are full, b takes the place of the smallest
// if it is larger and fits: frames of a flush vary in size, and small
// buffers fit few of them.
func (zs *zstdState) spare(b []byte) {
	switch {
	case cap(b) == 0:
	case len(zs.spares) == 0 || zs.spareBytes+cap(b) <= spareMaxBytes:
		zs.spares = append(zs.spares, b[:0])
		zs.spareBytes += cap(b)
	default:
		i := 0
		for k, s := range zs.spares {
			if cap(s) < cap(zs.spares[i]) {
				i = k
			}
		}
		if old := cap(zs.spares[i]); old < cap(b) && zs.spareBytes-old+cap(b) <= spareMaxBytes {
			zs.spares[i] = b[:0]
			zs.spareBytes += cap(b) - old
		}
	}
}

// takeSpare returns the smallest idle content buffer that holds bound
// bytes, or nil: decodeFrame then makes one. (A buffer too small for the
// frame would be dropped by decodeFrame, and a new one made anyway.)
func (zs *zstdState) takeSpare(bound int) []byte {
	best := -1
	for i, s := range zs.spares {
		if cap(s) >= bound && (best < 0 || cap(s) < cap(zs.spares[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := zs.spares[best]
	last := len(zs.spares) - 1
	zs.spares[best], zs.spares[last] = zs.spares[last], nil
	zs.spares = zs.spares[:last]
	zs.spareBytes -= cap(b)
	return b
}

// NewZstdReader returns a Reader of a zstd-encoded log: a concatenation of
// zstd frames whose decompressed bytes form a raw log. Frames are taken
// one at a time, in order, while the next few (two to four, one per core)
// are decoded ahead on goroutines of the Reader's (see prefetch), so
// memory is bounded by those frames decoded (4 MiB in all, or one frame),
// their compressed copies and 1 MiB of the file read ahead. Torn tail and corruption
// follow docs/format.md §9: a last frame that is incomplete or fails its checksum, or
// trailing bytes that form no complete frame, are torn; a bad frame
// followed by a valid one (a data frame that decodes, or a tail frame,
// which is written only once every frame before it is durable), or a frame
// that ends inside a row, is corruption at the frame's offset. Skippable
// frames are not trusted for their extent: a tail frame that is not
// exactly one, or another skippable frame followed by bytes that start no
// frame, is damage like a bad data frame. A Reader started by WithStart at
// offset 0 passes over the header row.
func NewZstdReader(src io.Reader, codec *ZstdCodec, opts ...ReaderOption) *Reader {
	latch := &latchReader{r: src}
	r := NewReader(latch, opts...)
	r.zs = &zstdState{codec: codec, frameOff: r.bufOff, frameEnd: r.bufOff, endSeq: r.next,
		skipHeader: r.hdrDone && r.bufOff == 0, maxAhead: framesAhead(), minAhead: minAhead, latch: latch}
	return r
}

// LastFrame returns the offset and length of the last data frame a zstd
// Reader read in full, or zeros.
func (r *Reader) LastFrame() (off, n int64) {
	if r.zs == nil || r.zs.frameEnd == r.zs.frameOff {
		return 0, 0
	}
	return r.zs.frameOff, r.zs.frameEnd - r.zs.frameOff
}

// zstdHeader reads the header from the first frame.
func (r *Reader) zstdHeader() ([]byte, error) {
	if !r.nextFrame() {
		// No log without a header: nothing read is good, and a first
		// frame that is missing or bad is no torn tail.
		r.end, r.torn = 0, nil
		var ce *CorruptError
		if errors.As(r.err, &ce) {
			ce.Offset, ce.Seq = 0, -1 // the header is what is damaged
		}
		if r.err != nil {
			return nil, r.err
		}
		return nil, r.fail(&CorruptError{Path: r.path, Offset: 0, Seq: -1, Reason: "no complete first frame with a header row"})
	}
	zs := r.zs
	i := bytes.IndexByte(zs.content, '\n')
	line := zs.content[:i]
	zs.cpos = i + 1
	return line, nil
}

// readZstdRow reads the next row of the current frame, loading frames as
// needed.
func (r *Reader) readZstdRow() {
	zs := r.zs
	for zs.cpos >= len(zs.content) {
		r.end, zs.endSeq = zs.frameEnd, r.next
		if !r.nextFrame() {
			return
		}
		if zs.skipHeader {
			// Started by WithStart at the top of the file: the first
			// frame opens with the header row (and may hold rows).
			zs.skipHeader = false
			zs.cpos = bytes.IndexByte(zs.content, '\n') + 1
		}
	}
	rest := zs.content[zs.cpos:]
	i := bytes.IndexByte(rest, '\n')
	line := rest[:i]
	zs.cpos += i + 1
	if err := decodeRow(line, &r.cur); err != nil {
		r.cur.n = 0
		r.fail(&CorruptError{Path: r.path, Offset: zs.frameOff, Seq: zs.frameSeq, Reason: fmt.Sprintf("seq %d, in a frame that passed its checksum: %v", r.next, err)})
		return
	}
	if r.next == anySeq {
		r.next = r.cur.seq
	}
	if r.cur.seq != r.next {
		seq := r.cur.seq
		r.cur.n = 0
		r.fail(&CorruptError{Path: r.path, Offset: zs.frameOff, Seq: zs.frameSeq, Reason: fmt.Sprintf("seq %d where %d was expected, in a frame that passed its checksum", seq, r.next)})
		return
	}
	r.curIdx = 0
	r.next += int64(r.cur.n)
	if zs.cpos >= len(zs.content) {
		r.end, zs.endSeq = zs.frameEnd, r.next
	}
}

// nextFrame loads the next data frame into zs.content, passing over
// skippable frames. It returns false at the end of the read (clean, torn or
// failed).
func (r *Reader) nextFrame() bool {
	zs := r.zs
	for {
		off := r.bufOff
		n, skippable, err := r.frameAhead()
		if err != nil {
			r.fail(fmt.Errorf("eventlog: reading %s at offset %d: %w", r.name(), off, err))
			return false
		}
		switch {
		case n == 0 && r.w == r.r:
			r.done = true // clean end
			return false
		case n < 0: // the input ends inside it: torn, unless a valid frame follows
			r.badFrame(off, "a frame that runs past the end of the file")
			return false
		case n == 0: // not a frame
			r.badFrame(off, "bytes that are not a zstd frame")
			return false
		case skippable && r.tailMagicAhead() && n != zstdframe.TailSize:
			// Ours, with a damaged size field: it must not swallow the
			// frames after it, nor call them torn.
			r.badFrame(off, "a tail frame whose size field is damaged")
			return false
		case skippable && n <= maxBufferedSkip:
			// Small skippable frames (ours) are buffered whole, so that one
			// whose size field is damaged is searched past like any bad frame.
			if err := r.ensure(n); err != nil {
				r.fail(fmt.Errorf("eventlog: reading %s at offset %d: %w", r.name(), off, err))
				return false
			}
			if r.w-r.r < n {
				r.badFrame(off, "a skippable frame that runs past the end of the file")
				return false
			}
			if r.tailMagicAhead() {
				if !r.tailFrameFits(off) {
					r.badFrame(off, "a damaged tail frame (it does not describe the log before it)")
					return false
				}
			} else if ok, err := r.endsAtFrame(n); err != nil {
				r.fail(fmt.Errorf("eventlog: reading %s at offset %d: %w", r.name(), off, err))
				return false
			} else if !ok {
				// Its size field is damaged: it ends inside the frame after
				// it, which must not be passed over unseen. (A tail frame's
				// size is checked with the rest of it.)
				r.badFrame(off, "a skippable frame followed by bytes that start no frame")
				return false
			}
			r.consume(n)
			r.end, zs.endSeq = r.bufOff, r.next
			continue
		case skippable:
			ok, err := r.discard(n)
			if err != nil {
				r.fail(fmt.Errorf("eventlog: reading %s at offset %d: %w", r.name(), off, err))
				return false
			}
			if !ok {
				r.tornFrom(off)
				return false
			}
			r.end, zs.endSeq = r.bufOff, r.next
			continue
		}
		frame := r.buf[r.r : r.r+n]
		content, derr := r.decodeAt(frame, off, n)
		if errors.Is(derr, errCodecClosed) { // no fault of the file's
			r.fail(fmt.Errorf("eventlog: reading %s at offset %d: %w", r.name(), off, derr))
			return false
		}
		if errors.Is(derr, zstdframe.ErrTooLarge) {
			r.fail(&CorruptError{Path: r.path, Offset: off, Seq: r.next, Reason: derr.Error()})
			return false
		}
		if derr != nil {
			// The frame's bytes stay buffered: a valid frame is searched for
			// from its second byte on, inside what its damaged headers claim.
			r.badFrame(off, "frame fails its checksum or decoding: "+derr.Error())
			return false
		}
		r.consume(n)
		if len(content) == 0 {
			zs.content = content
			r.end, zs.endSeq = r.bufOff, r.next
			continue // an empty frame holds no rows
		}
		if content[len(content)-1] != '\n' {
			r.fail(&CorruptError{Path: r.path, Offset: off, Seq: r.next, Reason: "frame ends in the middle of a row"})
			return false
		}
		zs.content, zs.cpos, zs.frameOff, zs.frameEnd, zs.frameSeq = content, 0, off, off+int64(n), r.next
		zs.framed = true
		r.prefetch()
		return true
	}
}

// endsAtFrame reports whether the n bytes buffered at the read position
// are followed by what may follow a frame (see startsFrame).
func (r *Reader) endsAtFrame(n int) (bool, error) {
	if err := r.ensure(n + 4); err != nil {
		return false, err
	}
	return startsFrame(r.buf[r.r+n : r.w]), nil
}

// startsFrame reports whether b, the bytes after a frame (all that is
// left, or at least 4), can be what follows a frame: nothing, the start of
// a frame (or of its magic, cut short), or zero bytes (blocks a power cut
// left unwritten). Anything else means the frame before is damaged.
func startsFrame(b []byte) bool {
	if len(b) == 0 || b[0] == 0 {
		return true
	}
	k := min(len(b), 4)
	if bytes.HasPrefix(zstdframe.MagicBytes, b[:k]) {
		return true
	}
	var magic [4]byte
	copy(magic[:], b[:k])
	m := binary.LittleEndian.Uint32(magic[:])
	mask := uint32(0xFFFFFFF0 & (uint64(1)<<(8*k) - 1)) // the bytes there are; the low 4 bits are free
	return m&mask == zstdframe.SkippableMagic&mask
}

// tailMagicAhead reports whether the buffered bytes at the read position
// start with the tail frame's magic.
func (r *Reader) tailMagicAhead() bool {
	return bytes.HasPrefix(r.buf[r.r:r.w], zstdframe.TailMagicBytes)
}

// tailFrameFits reports whether the tail frame buffered at the read
// position (file offset off) is intact: it stands at its own offset and,
// when this Reader has read a data frame, names that frame and the seq
// that follows it, as a writer closing after it would have. A tail frame is
// derived, but damage in it followed by a valid frame is damage like any
// other (docs/format.md, Torn tail or corruption).
func (r *Reader) tailFrameFits(off int64) bool {
	b := r.buf[r.r : r.r+zstdframe.TailSize]
	lastOff, lastLen, ok := zstdframe.ParseTail(b, off)
	if !ok || !r.zs.framed {
		return ok
	}
	zs := r.zs
	next := int64(binary.LittleEndian.Uint64(b[40:]))
	return lastOff == zs.frameOff && lastLen == zs.frameEnd-zs.frameOff && (r.next == anySeq || next == r.next)
}

// frameAhead finds the extent of the frame at the read position, buffering
// a data frame whole. n > 0: its length; n < 0: the input ends inside it;
// n == 0: no bytes are left (r.w == r.r) or the bytes are not a frame.
func (r *Reader) frameAhead() (n int, skippable bool, err error) {
	for {
		n, skippable, need, ferr := zstdframe.ExtentOf(r.buf[r.r:r.w])
		switch {
		case ferr != nil:
			return 0, false, nil
		case need == 0 && skippable:
			return n, true, nil
		case need == 0 && r.w-r.r >= n:
			return n, false, nil
		case need == 0:
			need = n
		}
		if r.eof {
			if r.w == r.r {
				return 0, false, nil
			}
			return -1, skippable, nil
		}
		if err := r.ensure(need); err != nil {
			return 0, false, err
		}
	}
}

// ensure buffers at least n unread bytes, or everything left.
func (r *Reader) ensure(n int) error {
	for r.w-r.r < n && !r.eof {
		if err := r.fill(); err != nil {
			return err
		}
	}
	return nil
}

// discard consumes n bytes without holding them; false if the input ends
// first.
func (r *Reader) discard(n int) (bool, error) {
	for n > 0 {
		if r.w == r.r {
			if r.eof {
				return false, nil
			}
			if err := r.fill(); err != nil {
				return false, err
			}
			continue
		}
		k := min(n, r.w-r.r)
		r.consume(k)
		n -= k
	}
	return true, nil
}

// tornFrom ends the read with a torn tail from off to the end of the input.
func (r *Reader) tornFrom(off int64) {
	for {
		ok, err := r.discard(readChunk)
		if err != nil {
			r.fail(fmt.Errorf("eventlog: reading %s after offset %d: %w", r.name(), off, err))
			return
		}
		if !ok {
			break
		}
	}
	r.done = true
	r.torn = &TornTail{Offset: off, Bytes: r.bufOff - off}
}

// badFrame decides what a bad frame (or bytes that are no frame) at off
// is: corruption when a valid frame follows, a torn tail otherwise.
func (r *Reader) badFrame(off int64, reason string) {
	at, ok, err := r.validFrameAhead(off)
	switch {
	case err != nil:
		r.fail(fmt.Errorf("eventlog: reading %s after offset %d: %w", r.name(), off, err))
	case ok:
		r.fail(&CorruptError{Path: r.path, Offset: off, Seq: r.next,
			Reason: fmt.Sprintf("%s, followed by a valid frame at offset %d", reason, at)})
	default:
		r.done = true
		r.torn = &TornTail{Offset: off, Bytes: r.bufOff - off}
	}
}

// validFrameAhead looks through the rest of the input for a data frame
// that decodes, or a tail frame (written only after every frame before it
// was made durable, so what precedes it is no torn write). It consumes the
// input.
func (r *Reader) validFrameAhead(after int64) (int64, bool, error) {
	if r.bufOff == after && r.w > r.r {
		r.consume(1) // not the bad frame itself
	}
	for {
		i := indexMagic(r.buf[r.r:r.w])
		if i < 0 {
			if r.eof {
				r.consume(r.w - r.r)
				return 0, false, nil
			}
			r.consume(max(0, r.w-r.r-3))
			if err := r.fill(); err != nil {
				return 0, false, err
			}
			continue
		}
		r.consume(i)
		at := r.bufOff
		if bytes.HasPrefix(r.buf[r.r:r.w], zstdframe.TailMagicBytes) {
			if err := r.ensure(zstdframe.TailSize); err != nil {
				return 0, false, err
			}
			if r.w-r.r >= zstdframe.TailSize {
				if _, _, ok := zstdframe.ParseTail(r.buf[r.r:r.r+zstdframe.TailSize], at); ok {
					return at, true, nil
				}
			}
		} else {
			n, skippable, err := r.frameAhead()
			if err != nil {
				return 0, false, err
			}
			if n > 0 && !skippable {
				if _, derr := r.zs.codec.decodeFrame(r.buf[r.r:r.r+n], nil); derr == nil {
					return at, true, nil
				}
			}
		}
		r.consume(1)
	}
}

// indexMagic returns the index of the first zstd or tail frame magic in b,
// or -1.
func indexMagic(b []byte) int {
	i := bytes.Index(b, zstdframe.MagicBytes)
	if j := bytes.Index(b, zstdframe.TailMagicBytes); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	return i
}
