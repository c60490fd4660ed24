package file

import (
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/internal/lineage"

	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"slices"
	"sort"
	"sync"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// A TailReader reads the events at the end of a session's log as Stat
// reads its last event: without checking, or reading, the rest of the log.
// Stop facts (recorder.ReadFacts) need the last turn and little else, and
// opening a handle to get them checks the whole log whenever the store has
// no checked record of the file as it is (a writer has appended since, the
// file was converted or copied, its writer crashed): seconds for a
// gigabyte. A TailReader costs what its reads cost, wherever they are:
//
//   - raw: any offset leads to the next row (logfile.RowAfter), so a seq
//     is found by a binary search over the file's bytes;
//   - zstd: from the checked record's seq index when the file still holds
//     the bytes the record was taken of, else frame by frame backward
//     from the last one (logfile.FrameBefore).
//
// Every row it yields is decoded and checked as a full read checks it, and
// a fork's inherited events come from a TailReader on its parent. It does
// not find damage outside what it reads: that is Open's job (and verify's).
// A TailReader is safe for concurrent use. It is the file store's Tail.
type TailReader struct {
	store *Store
	id    string // "" for a file outside the store
	loc   location
	path  string
	enc   *encoding
	f     afero.File
	size  int64
	tail  logfile.Tail

	mu      sync.Mutex
	anchors []indexEntry // row or frame starts found so far, by offset, with their seqs
	index   []indexEntry // zstd: the checked record's, when it holds the file's prefix
	before  map[int64]frameStep
	blocks  blockCache // what seek read, for the next step back
	// zstd: frames decoded, by offset, the newest last in frameOrder; the
	// frames the checked record names, by the offset they end at; the
	// longest frame seen (the first window FrameBefore searches is twice
	// it).
	frames     map[int64]decodedAt
	frameOrder []int64
	known      map[int64]zstdframe.Frame
	frameLen   int64
	parent     *TailReader
}

// OpenTailPath opens a TailReader on the log file at path, named freely or
// not, as OpenPath opens a handle.
func (s *Store) OpenTailPath(ctx context.Context, path string) (*TailReader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	loc, nameID, err := s.pathLocation(path)
	if err != nil {
		return nil, err
	}
	return s.openTail(ctx, s.storeID(path, nameID), nameID, loc)
}

func (s *Store) openTail(ctx context.Context, id, nameID string, loc location) (*TailReader, error) {
	f, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", handle.ErrNotFound, loc.path)
		}
		return nil, err
	}
	t, err := s.readTail(ctx, id, nameID, loc, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

func (s *Store) readTail(ctx context.Context, id, nameID string, loc location, f afero.File) (*TailReader, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("handle: stat %q: %w", loc.path, err)
	}
	t := &TailReader{store: s, id: id, loc: loc, path: loc.path, enc: loc.enc, f: f, size: fi.Size()}
	src := ctxReaderAt{ctx: ctx, r: f}
	var rec checkedRecord
	held := false
	// A clear raw log's tail needs no record; a sealed log's reads from
	// the record's seq index (see readSealed), past the key records it
	// names.
	if id != "" && (loc.enc.z != nil || loc.sealed != nil) {
		if r, ok := s.loadChecked(ctx, id, t.size < checkedMin); ok && r.holdsPrefix(src, identityOf(fi)) && (loc.sealed != nil) == (r.Keys != nil) {
			rec, held = r, true
		}
	}
	if held && loc.sealed != nil {
		if _, err := loc.readEnvelopes(src, rec.Keys); err != nil {
			return nil, err
		}
	}
	known := func() zstdframe.Frame {
		if held {
			return rec.lastFrame()
		}
		return zstdframe.Frame{}
	}
	t.tail, err = loc.tail(src, t.size, known)
	if errors.Is(err, seal.ErrNoKey) && !held && s.laterKeys(ctx, id, loc, src, fi) {
		t.tail, err = loc.tail(src, t.size, known)
	}
	if err != nil {
		return nil, err
	}
	if nameID != "" && t.tail.Header.ID != nameID {
		return nil, &eventlog.CorruptError{Path: loc.path, Seq: -1, Reason: "header id " + t.tail.Header.ID + " does not match the file name", Fix: idMismatchFix}
	}
	first := t.tail.Header.FirstSeq()
	t.anchors = []indexEntry{{off: t.tail.HeaderEnd, seq: first}}
	if !t.tail.Found {
		return t, nil
	}
	if loc.sealed != nil {
		if held {
			for _, e := range rec.scan(t.tail.Header, nil).index {
				if e.off > t.tail.HeaderEnd && e.off < t.tail.End && e.seq <= t.tail.Last.Seq {
					t.anchors = append(t.anchors, e)
				}
			}
		}
		return t, nil
	}
	if loc.enc.z != nil {
		lf := t.tail.LastFrame
		rows, ok := logfile.FrameRowsOf(t.tail.LastContent, lf.Offset == t.tail.HeaderEnd)
		if !ok {
			return nil, &eventlog.CorruptError{Path: loc.path, Offset: lf.Offset, Seq: -1, Reason: "the last frame holds no whole rows"}
		}
		t.cacheFrame(lf, t.tail.LastContent)
		if lf.Offset > t.tail.HeaderEnd {
			t.anchors = append(t.anchors, indexEntry{off: lf.Offset, seq: rows.First})
			t.before = map[int64]frameStep{t.tail.End: {lf, rows}}
		}
		t.frameLen = lf.Len
		if held {
			if k := rec.lastFrame(); k.Len > 0 && k.Offset > t.tail.HeaderEnd {
				t.known = map[int64]zstdframe.Frame{k.Offset + k.Len: k}
			}
			for _, e := range rec.scan(t.tail.Header, nil).index {
				if e.off > t.tail.HeaderEnd && e.off < lf.Offset && e.seq < rows.First {
					t.index = append(t.index, e)
				}
			}
		}
	}
	t.anchors = append(t.anchors, indexEntry{off: t.tail.End, seq: t.tail.Last.Seq + 1})
	return t, nil
}

// Info describes the session as Stat does (StatPath, for a file outside
// the store: its ID is the header's), from what the reader read at open.
func (t *TailReader) Info() handle.Info {
	id := t.id
	if id == "" {
		id = t.tail.Header.ID
	}
	return infoOf(id, t.loc, t.size, t.tail)
}

// ID returns the session's ID (the header's).
func (t *TailReader) ID() string { return t.tail.Header.ID }

// Path returns the log file's path.
func (t *TailReader) Path() string { return t.path }

// Header returns the log's header.
func (t *TailReader) Header() eventlog.Header { return t.tail.Header }

// Seq returns the seq of the last event, as Stat found it when the reader
// was opened (FirstSeq-1 when the log has none).
func (t *TailReader) Seq() int64 {
	if !t.tail.Found {
		return t.tail.Header.FirstSeq() - 1
	}
	return t.tail.Last.Seq
}

// Close closes the log file (and the parent's).
func (t *TailReader) Close() error {
	t.mu.Lock()
	p := t.parent
	t.mu.Unlock()
	err := t.f.Close()
	if p != nil {
		err = errors.Join(err, p.Close())
	}
	return err
}

// Read yields the events with from <= seq <= to (to may be End) of the
// file as it was when the reader opened (what a writer appended since lies
// past the size it took), a fork's inherited ones first. An error is
// yielded last.
func (t *TailReader) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		t.read(ctx, max(from, 0), to, 0, yield)
	}
}

func (t *TailReader) read(ctx context.Context, from, to int64, depth int, yield func(eventlog.Event, error) bool) bool {
	parent := func(ctx context.Context, p eventlog.Parent) (lineage.RangeReader, error) {
		pt, err := t.parentReader(ctx, p)
		if err != nil {
			return nil, err
		}
		return pt.read, nil
	}
	return lineage.Read(ctx, t.tail.Header, t.path, from, to, depth, parent,
		func(from, to int64) bool {
			if !t.tail.Found {
				return true
			}
			off, seq, err := t.seek(ctx, from)
			if err != nil {
				yield(eventlog.Event{}, err)
				return false
			}
			if t.enc.z != nil && t.loc.sealed == nil {
				return t.readFrames(ctx, off, seq, from, to, yield)
			}
			r := t.loc.reader(ctx, io.NewSectionReader(t.f, off, t.size-off), readAt(off, seq, from))
			ok, _ := lineage.Rows(ctx, r, from, to, yield)
			return ok
		}, brokenLineage, yield)
}

// readFrames yields the events from..to of a zstd log read frame by frame
// from the frame at off, whose first row holds seq, through the frames
// decoded last (a stop-facts walk reads windows of the same last frame),
// up to to or the last complete frame.
func (t *TailReader) readFrames(ctx context.Context, off, seq, from, to int64, yield func(eventlog.Event, error) bool) bool {
	src := ctxReaderAt{ctx: ctx, r: t.f}
	for off < t.size && seq <= to {
		f, content, err := t.frame(src, off)
		if err != nil {
			if off < t.tail.End { // before the last event: damage
				yield(eventlog.Event{}, err)
				return false
			}
			return true // after it: a writer's frame in progress, or a torn tail
		}
		off += f.Len
		if f.Skippable || len(content) == 0 {
			continue
		}
		if f.Offset == t.tail.HeaderEnd {
			content = content[bytes.IndexByte(content, '\n')+1:]
		}
		r := eventlog.NewReader(bytes.NewReader(content), eventlog.WithPath(t.path), eventlog.WithStart(0, seq), eventlog.WithFrom(from))
		if ok, _ := lineage.Rows(ctx, r, from, to, func(e eventlog.Event, err error) bool {
			if err != nil {
				err = fmt.Errorf("handle: %q, in the frame at offset %d: %w", t.path, f.Offset, err)
			}
			return yield(e, err)
		}); !ok {
			return false
		}
		if r.Torn() != nil {
			yield(eventlog.Event{}, &eventlog.CorruptError{Path: t.path, Offset: f.Offset, Seq: r.NextSeq(), Reason: "frame ends in the middle of a row"})
			return false
		}
		seq = r.NextSeq()
	}
	return true
}

// frame returns the frame at off and its content, decoded once: the
// frames decoded last are kept (tailFrames of them).
func (t *TailReader) frame(src io.ReaderAt, off int64) (zstdframe.Frame, []byte, error) {
	t.mu.Lock()
	c, ok := t.frames[off]
	t.mu.Unlock()
	if ok {
		return c.f, c.content, nil
	}
	f, content, err := logfile.ReadFrame(src, off, t.size, t.enc.z, t.path)
	if err == nil {
		t.mu.Lock()
		t.cacheFrame(f, content)
		t.mu.Unlock()
	}
	return f, content, err
}

// tailFrames is how many decoded frames a TailReader keeps.
const tailFrames = 4

// decodedAt is a frame and its content, kept by a TailReader.
type decodedAt struct {
	f       zstdframe.Frame
	content []byte
}

// cacheFrame keeps a decoded frame, dropping the oldest past tailFrames.
// Called with mu held (or before the reader is shared).
func (t *TailReader) cacheFrame(f zstdframe.Frame, content []byte) {
	if t.frames == nil {
		t.frames = map[int64]decodedAt{}
	}
	if _, ok := t.frames[f.Offset]; ok {
		return
	}
	if len(t.frameOrder) == tailFrames {
		delete(t.frames, t.frameOrder[0])
		t.frameOrder = t.frameOrder[1:]
	}
	t.frames[f.Offset] = decodedAt{f, content}
	t.frameOrder = append(t.frameOrder, f.Offset)
}

// parentReader returns a TailReader on the fork's parent, opened on first
// need.
func (t *TailReader) parentReader(ctx context.Context, p eventlog.Parent) (*TailReader, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.parent != nil {
		return t.parent, nil
	}
	var pt *TailReader
	loc, err := t.store.existing(ctx, p.ID)
	if err == nil {
		pt, err = t.store.openTail(ctx, p.ID, p.ID, loc)
	}
	if errors.Is(err, handle.ErrNotFound) {
		return nil, &handle.LineageError{Path: t.path, Parent: p.ID, Seq: p.Seq, Reason: "the parent session is missing"}
	}
	if err != nil {
		return nil, err
	}
	t.parent = pt
	return pt, nil
}

// tailSeekSpan is how close to the row sought a raw binary search gets
// before the rows are read in order.
const tailSeekSpan = 64 << 10

// seek returns the offset of a row (raw) or frame (zstd) start whose first
// seq is at most seq and near it, and that first seq: where a reader
// started with WithStart finds seq.
func (t *TailReader) seek(ctx context.Context, seq int64) (off, first int64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.blocks.r, t.blocks.size = ctxReaderAt{ctx: ctx, r: t.f}, t.size
	src := &t.blocks
	// The anchors around seq: lo starts at or before it, hi after it.
	i := sort.Search(len(t.anchors), func(i int) bool { return t.anchors[i].seq > seq })
	lo, hi := t.anchors[max(i-1, 0)], t.anchors[min(i, len(t.anchors)-1)]
	if t.loc.sealed != nil {
		// A sealed log is read on from the nearest record boundary known
		// before seq (the checked record's index), its records opened in
		// order: a search would open one at every step.
		return lo.off, lo.seq, nil
	}
	if t.enc.z == nil {
		for hi.off-lo.off > tailSeekSpan {
			mid := lo.off + (hi.off-lo.off)/2
			rowOff, rowSeq, found, err := logfile.RowAfter(src, mid, hi.off)
			if err != nil {
				return 0, 0, err
			}
			if !found || rowOff >= hi.off {
				hi = indexEntry{off: mid, seq: hi.seq} // nothing decodes between: narrow from above
				continue
			}
			a := indexEntry{off: rowOff, seq: rowSeq}
			t.addAnchor(a)
			if rowSeq <= seq {
				lo = a
			} else {
				hi = a
			}
		}
		return lo.off, lo.seq, nil
	}
	// zstd: frame by frame backward from hi, until a frame starts at or
	// before seq, or lo is reached. Past a stride of the checked record's
	// index, from the index entry before seq when there is one nearer than
	// lo (it reads at most a stride forward), or from lo when seq is
	// nearer lo than hi in events.
	idx := t.index[:sort.Search(len(t.index), func(j int) bool { return t.index[j].seq > seq })]
	if len(idx) > 0 && idx[len(idx)-1].seq > lo.seq {
		lo = idx[len(idx)-1]
	}
	stepped := int64(0)
	for {
		if stepped > checkedStride && (lo.seq > t.anchors[0].seq && lo.off > t.anchors[0].off || seq-lo.seq < hi.seq-seq) {
			return lo.off, lo.seq, nil
		}
		f, rows, err := t.frameBefore(src, hi)
		if err != nil {
			return 0, 0, err
		}
		stepped += hi.off - f.Offset
		if f.Offset <= lo.off {
			return lo.off, lo.seq, nil
		}
		if rows.Next == rows.First { // no rows: an empty or a skippable frame
			hi = indexEntry{off: f.Offset, seq: hi.seq}
			continue
		}
		a := indexEntry{off: f.Offset, seq: rows.First}
		t.addAnchor(a)
		if a.seq <= seq {
			return a.off, a.seq, nil
		}
		hi = a
	}
}

// frameStep is what logfile.FrameBefore found before an offset.
type frameStep struct {
	f    zstdframe.Frame
	rows logfile.FrameRows
}

// frameBefore returns the frame that ends where hi starts, and its rows,
// which must end just before hi's seq; found once. Called with mu held.
func (t *TailReader) frameBefore(src io.ReaderAt, hi indexEntry) (zstdframe.Frame, logfile.FrameRows, error) {
	if st, ok := t.before[hi.off]; ok {
		return st.f, st.rows, nil
	}
	var f zstdframe.Frame
	var rows logfile.FrameRows
	var content []byte
	err := errors.New("not known")
	if k, ok := t.known[hi.off]; ok {
		// The checked record names this frame: no search, if it is one.
		if f, content, err = logfile.ReadFrame(src, k.Offset, hi.off, t.enc.z, t.path); err == nil {
			var whole bool
			if rows, whole = logfile.FrameRowsOf(content, f.Offset == t.tail.HeaderEnd); !whole || f.Offset+f.Len != hi.off || f.Skippable {
				err = errors.New("not a data frame")
			}
		}
	}
	if err != nil {
		f, rows, content, err = logfile.FrameBefore(src, hi.off, t.tail.HeaderEnd, 2*t.frameLen, t.enc.z)
	}
	if err != nil {
		return f, rows, fmt.Errorf("handle: reading the tail of %q: %w", t.path, err)
	}
	if !f.Skippable {
		t.cacheFrame(f, content)
		t.frameLen = max(t.frameLen, f.Len)
	}
	if rows.Next > rows.First && rows.Next != hi.seq {
		return f, rows, &eventlog.CorruptError{Path: t.path, Offset: f.Offset, Seq: rows.First,
			Reason: fmt.Sprintf("the frame before offset %d ends at seq %d, not %d", hi.off, rows.Next-1, hi.seq-1)}
	}
	if t.before == nil {
		t.before = map[int64]frameStep{}
	}
	t.before[hi.off] = frameStep{f, rows}
	return f, rows, nil
}

// addAnchor records a row or frame start found by seek. Called with mu
// held.
func (t *TailReader) addAnchor(a indexEntry) {
	i := sort.Search(len(t.anchors), func(i int) bool { return t.anchors[i].off >= a.off })
	if i < len(t.anchors) && t.anchors[i].off == a.off {
		return
	}
	t.anchors = slices.Insert(t.anchors, i, a)
}

// blockCache is an io.ReaderAt that keeps the last blocks it read: a step
// back reads a window before a frame, and the next step reads the window
// before that, which is mostly the same bytes.
type blockCache struct {
	r      io.ReaderAt
	size   int64
	blocks map[int64][]byte // by block offset
	order  []int64          // offsets, the oldest first
}

const (
	cacheBlock  = 64 << 10
	cacheBlocks = 16
)

// ReadAt implements io.ReaderAt.
func (c *blockCache) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= c.size {
			return n, io.EOF
		}
		b, err := c.block(at - at%cacheBlock)
		if err != nil {
			return n, err
		}
		k := copy(p[n:], b[at%cacheBlock:])
		if k == 0 {
			return n, io.EOF
		}
		n += k
	}
	return n, nil
}

// block returns the block at off, read once.
func (c *blockCache) block(off int64) ([]byte, error) {
	if b, ok := c.blocks[off]; ok {
		return b, nil
	}
	b := make([]byte, min(cacheBlock, c.size-off))
	if _, err := c.r.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if c.blocks == nil {
		c.blocks = map[int64][]byte{}
	}
	if len(c.order) == cacheBlocks {
		delete(c.blocks, c.order[0])
		c.order = c.order[1:]
	}
	c.blocks[off] = b
	c.order = append(c.order, off)
	return b, nil
}

// brokenLineage is the error of the fork at path whose parent p cannot
// give what lineage.Read needs.
func brokenLineage(path string, p eventlog.Parent, reason string) error {
	return &handle.LineageError{Path: path, Parent: p.ID, Seq: p.Seq, Reason: reason}
}
