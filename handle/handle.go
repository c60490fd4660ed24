package handle

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
)

// indexStride is how many bytes of log lie between two entries of a
// handle's in-memory seq index, which lets Read start near its first seq.
const indexStride = 1 << 20

// indexEntry says that the row holding seq starts at off.
type indexEntry struct {
	off int64
	seq int64
}

func addIndex(idx []indexEntry, off, seq int64) []indexEntry {
	if off-idx[len(idx)-1].off >= indexStride {
		idx = append(idx, indexEntry{off: off, seq: seq})
	}
	return idx
}

// fileHandle is a Handle on a FileStore session.
//
// A write handle appends to pending under mu; Flush makes one caller the
// leader, which takes everything pending, writes it with one write and one
// fsync, and wakes the others (group commit). Bytes reach the file only in
// a flush, and a flush starts only after the previous one's fsync returned.
type fileHandle struct {
	store *FileStore
	enc   *encoding
	hdr   eventlog.Header
	path  string
	f     afero.File
	lock  writerLock // nil for a read-only handle

	mu        sync.Mutex
	next      int64            // next seq to assign (writer) or to read (reader)
	durable   int64            // last seq made durable
	pending   []eventlog.Event // appended, not yet taken by a flush
	inflight  []eventlog.Event // being written by the current flush
	spare     []eventlog.Event // the last flush's batch, emptied: the next pending
	size      int64            // bytes of complete rows on disk
	index     []indexEntry
	recent    indexEntry // where the last flush's rows start: reads of the newest events start there
	flushing  bool
	flight    *flushRound // the running flush, or the last one
	taken     int64       // last seq of the running flush's batch
	gather                // the leader's wait for concurrent appenders
	cutTorn   bool        // a torn tail must be cut before the next write
	err       error       // poison: a write or fsync failed
	closing   bool
	closed    bool
	recovery  Recovery
	buf       []byte   // the leader's encode buffer
	frameBuf  []byte   // the leader's compression buffer (zstd)
	lastFrame [2]int64 // offset and length of the last data frame (zstd)
	parts     []int    // the flush's parts, reused (see write)
	wrote     bool     // frames were written: a zstd log needs a tail frame
	// sinceChecked counts the bytes and frames written since the checked
	// record was last refreshed (zstd; under mu, see checkedDue).
	sinceChecked [2]int64

	stop   chan struct{} // stops the interval flusher
	stopWG sync.WaitGroup

	parentMu sync.Mutex
	parent   *fileHandle // a fork's parent, opened read-only on first need

	digMu sync.Mutex       // serializes the digest's initialisation
	dig   *eventlog.Digest // running log digest (under mu), nil until first needed
}

func newFileHandle(s *FileStore, enc *encoding, hdr eventlog.Header, path string, f afero.File, lock writerLock, size int64, index []indexEntry) *fileHandle {
	first := hdr.FirstSeq()
	if index == nil {
		index = []indexEntry{{off: size, seq: first}}
	}
	h := &fileHandle{store: s, enc: enc, hdr: hdr, path: path, f: guardFile(f), lock: lock,
		next: first, durable: first - 1, size: size, index: index, recent: index[len(index)-1]}
	if lock != nil && s.cfg.policy.interval > 0 {
		h.stop = make(chan struct{})
		h.stopWG.Add(1)
		go h.flushEvery(s.cfg.policy.interval)
	}
	return h
}

func (h *fileHandle) ID() string              { return h.hdr.ID }
func (h *fileHandle) Path() string            { return h.path }
func (h *fileHandle) Header() eventlog.Header { return h.hdr }
func (h *fileHandle) Writable() bool          { return h.lock != nil }
func (h *fileHandle) Recovery() Recovery      { return h.recovery }

func (h *fileHandle) Seq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.next - 1
}

func (h *fileHandle) DurableSeq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.durable
}

// usable reports why the handle cannot be used, if it cannot. Callers hold
// mu.
func (h *fileHandle) usable(write bool) error {
	switch {
	case h.closed || (write && h.closing):
		return fmt.Errorf("%w: %q", ErrClosed, h.path)
	case h.err != nil:
		return h.err
	case write && h.lock == nil:
		return fmt.Errorf("%w: %q", ErrReadOnly, h.path)
	}
	return nil
}

func (h *fileHandle) Append(ctx context.Context, events ...eventlog.Event) (int64, error) {
	return h.append(ctx, -1, events)
}

func (h *fileHandle) AppendAt(ctx context.Context, expected int64, events ...eventlog.Event) (int64, error) {
	if expected < 0 {
		return 0, &ConflictError{Path: h.path, Expected: expected, Next: h.Seq() + 1}
	}
	return h.append(ctx, expected, events)
}

// append validates and copies the batch, then queues it; expected < 0
// means any next seq.
func (h *fileHandle) append(ctx context.Context, expected int64, events []eventlog.Event) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var one [1]eventlog.Event // a one-event batch, the common case, is not allocated
	batch := one[:]
	if len(events) != 1 {
		batch = make([]eventlog.Event, len(events))
	}
	hasCheckpoint, err := prepareBatch(h.path, events, batch)
	if err != nil {
		return 0, err
	}
	if hasCheckpoint {
		if err := h.initDigest(ctx); err != nil {
			return 0, err
		}
	}
	h.mu.Lock()
	if err := h.usable(true); err != nil {
		h.mu.Unlock()
		return 0, err
	}
	if expected >= 0 && expected != h.next {
		next := h.next
		h.mu.Unlock()
		return 0, &ConflictError{Path: h.path, Expected: expected, Next: next}
	}
	for i := range batch {
		batch[i].Seq = h.next + int64(i)
	}
	dig, err := checkReserved(h.path, batch, h.dig, hasCheckpoint)
	if err != nil {
		h.mu.Unlock()
		return 0, err
	}
	h.dig = dig
	h.next += int64(len(batch))
	last := h.next - 1
	h.pending = append(h.pending, batch...)
	flush := h.store.cfg.policy.everyN > 0 && len(h.pending) >= h.store.cfg.policy.everyN
	h.mu.Unlock()
	if flush {
		return last, h.Flush(ctx)
	}
	return last, nil
}

// prepareBatch checks every event of a batch and sets batch (as long as
// events) to copies whose data are compacted and owned by the handle (one
// allocation for all of them); it reports whether the batch holds a
// checkpoint. It runs in the appender's goroutine before the handle's
// mutex is taken, so concurrent appenders check their events in parallel.
func prepareBatch(path string, events, batch []eventlog.Event) (hasCheckpoint bool, err error) {
	total := 0
	for i, e := range events {
		e, err := eventlog.Storable(e)
		if err != nil {
			return false, &EventError{Path: path, Index: i, Seq: -1, Err: err}
		}
		hasCheckpoint = hasCheckpoint || e.Type == eventlog.TypeCheckpoint
		batch[i] = e
		total += len(e.Data)
	}
	arena := make([]byte, 0, total)
	for i := range batch {
		if d := batch[i].Data; d != nil {
			arena = append(arena, d...)
			batch[i].Data = json.RawMessage(arena[len(arena)-len(d) : len(arena) : len(arena)])
		}
	}
	return hasCheckpoint, nil
}

// flushRound is one flush as its waiters see it. err is set before done is
// closed, so a waiter whose events the flush carries reads its outcome
// without taking mu again: the callers one fsync serves wake all at once
// and do not queue on the mutex on their way out.
type flushRound struct {
	done chan struct{}
	err  error // the poison, when the flush failed
}

func (h *fileHandle) Flush(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrClosed, h.path)
	}
	target := h.next - 1
	if target > h.durable && h.err == nil {
		// Counted for group commit: carried by the running flush when its
		// batch holds target, else waiting for the next one.
		h.gather.caller(h.flushing && target <= h.taken)
	}
	for {
		if h.err != nil {
			err := h.err
			h.mu.Unlock()
			return err
		}
		if h.durable >= target {
			h.mu.Unlock()
			return nil
		}
		if err := ctx.Err(); err != nil {
			h.mu.Unlock()
			return err
		}
		if !h.flushing {
			h.lead()
			continue
		}
		r, carried := h.flight, target <= h.taken
		h.mu.Unlock()
		if r.wait(ctx) && carried {
			return r.err // the flush that made target durable, or failed
		}
		h.mu.Lock()
	}
}

// wait waits for the flush to end or ctx to be done, and reports whether
// the flush ended.
func (r *flushRound) wait(ctx context.Context) bool {
	if ctx.Done() == nil {
		<-r.done
		return true
	}
	select {
	case <-r.done:
		return true
	case <-ctx.Done():
	}
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// lead runs one flush: everything pending, one write, one fsync. Called
// with mu held; releases it during I/O.
func (h *fileHandle) lead() {
	h.flushing = true
	round := &flushRound{done: make(chan struct{})}
	h.flight = round
	h.gather.wait(&h.mu)
	batch := h.pending
	h.pending, h.inflight, h.spare = h.spare[:0], batch, nil
	h.taken = h.next - 1
	cut, at := h.cutTorn, h.size
	h.mu.Unlock()
	started := time.Now()

	h.buf = h.store.enc.AppendRows(h.buf[:0], batch)
	out, parts := h.buf, append(h.parts[:0], 0)
	if h.enc.z != nil {
		// One frame per flush (docs/format.md §5): a batch larger than a frame is
		// written as several flushes, each frame durable before the next
		// is written, so at most the last frame can be torn.
		out, parts = h.frameBuf[:0], parts[:0]
		for rows := h.buf; len(rows) > 0; {
			n := eventlog.FrameCut(rows)
			parts = append(parts, len(out))
			out, _ = h.enc.z.AppendFrames(out, rows[:n])
			rows = rows[n:]
		}
		h.frameBuf = out
	}
	h.parts = parts
	last := parts[len(parts)-1]
	err := h.write(cut, at, out, parts)

	h.mu.Lock()
	h.flushing, h.inflight = false, nil
	h.gather.flushed(time.Since(started))
	if err != nil {
		h.err = &PoisonedError{Path: h.path, Err: err}
		round.err = h.err
		h.store.cfg.log.Error("flush failed; handle poisoned", "path", h.path, "err", err)
	} else if len(batch) > 0 {
		h.cutTorn = false
		h.index = addIndex(h.index, at, batch[0].Seq)
		h.recent = indexEntry{off: at, seq: batch[0].Seq}
		h.size += int64(len(out))
		h.durable = batch[len(batch)-1].Seq
		h.lastFrame = [2]int64{at + int64(last), int64(len(out) - last)}
		h.wrote = true
	}
	refresh := err == nil && h.checkedDue(len(out), len(parts), len(batch))
	var sc scanResult
	if refresh {
		sc = h.ownScan()
	}
	if cap(h.buf) > 4<<20 {
		h.buf, h.frameBuf = nil, nil // do not pin a large batch's buffers
	} else {
		clear(batch) // reused: holds no data of events already written
		h.spare = batch
	}
	close(round.done)
	if refresh {
		// After the callers are woken, and outside mu: a flush that writes
		// meanwhile makes the record stale, and saveChecked then keeps none.
		h.mu.Unlock()
		h.store.saveChecked(context.Background(), h.hdr.ID, h.f, nil, sc)
		h.mu.Lock()
	}
}

// write makes rows durable at offset at: cut a torn tail first if needed,
// then write and fsync each part of rows in turn (parts holds where each
// starts: one per zstd frame, one for raw rows).
func (h *fileHandle) write(cut bool, at int64, rows []byte, parts []int) error {
	if cut {
		if err := h.f.Truncate(at); err != nil {
			return fmt.Errorf("cutting the torn tail at offset %d: %w", at, err)
		}
		if err := h.f.Sync(); err != nil {
			return fmt.Errorf("fsync after cutting the torn tail: %w", err)
		}
		h.store.cfg.log.Info("torn tail cut", "path", h.path, "offset", at)
	}
	for i, start := range parts {
		end := len(rows)
		if i+1 < len(parts) {
			end = parts[i+1]
		}
		if start == end {
			continue
		}
		off := at + int64(start)
		if _, err := h.f.WriteAt(rows[start:end], off); err != nil {
			return fmt.Errorf("writing %d bytes at offset %d: %w", end-start, off, err)
		}
		if err := h.f.Sync(); err != nil {
			return fmt.Errorf("fsync: %w", err)
		}
	}
	return nil
}

func (h *fileHandle) flushEvery(d time.Duration) {
	defer h.stopWG.Done()
	ticks, stop := h.store.cfg.ticker(d)
	defer stop()
	for {
		select {
		case <-h.stop:
			return
		case <-ticks:
			if err := h.Flush(context.Background()); err != nil {
				h.store.cfg.log.Error("interval flush failed", "path", h.path, "err", err)
				return
			}
		}
	}
}

func (h *fileHandle) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		h.read(ctx, from, to, 0, yield)
	}
}

// read yields the logical log's events from..to: for a fork, the parent's
// first; it returns false when it stopped early (yield said so, or it
// yielded an error).
func (h *fileHandle) read(ctx context.Context, from, to int64, depth int, yield func(eventlog.Event, error) bool) bool {
	return ReadLogical(ctx, h.hdr, from, to, depth, h.checkUsable, h.readParent,
		func(from, to int64) bool { return h.readOwn(ctx, from, to, yield) }, yield)
}

// checkUsable is usable(false) under mu.
func (h *fileHandle) checkUsable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.usable(false)
}

// readOwn yields the events of the handle's own rows from..to (and a
// writer's unflushed ones); it returns false when it stopped early.
func (h *fileHandle) readOwn(ctx context.Context, from, to int64, yield func(eventlog.Event, error) bool) bool {
	h.mu.Lock()
	if err := h.usable(false); err != nil {
		h.mu.Unlock()
		yield(eventlog.Event{}, err)
		return false
	}
	writer := h.lock != nil
	size := h.size
	if !writer {
		size = 1 << 62 // a reader follows the file to its current end
	}
	mem := slices.Concat(h.inflight, h.pending)
	start := h.index[0]
	for _, e := range h.index {
		if e.seq <= from {
			start = e
		}
	}
	if h.recent.seq <= from && h.recent.off > start.off {
		start = h.recent
	}
	h.mu.Unlock()

	// A writer's newest events are in memory until flushed: a read that
	// starts there needs nothing from the file (the Recorder catching up
	// with a foreign append reads just that).
	if writer && len(mem) > 0 && from >= mem[0].Seq {
		size = start.off
	}
	r := h.enc.reader(ctx, io.NewSectionReader(h.f, start.off, size-start.off),
		eventlog.WithPath(h.path), eventlog.WithStart(start.off, start.seq), eventlog.WithFrom(from))
	return YieldRows(ctx, r, func(next int64) {
		if !writer {
			h.seen(next)
		}
	}, mem, from, to, yield)
}

// seen records how far a read-only handle has read.
func (h *fileHandle) seen(next int64) {
	h.mu.Lock()
	if next > h.next {
		h.next, h.durable = next, next-1
	}
	h.mu.Unlock()
}

func (h *fileHandle) Close() error {
	h.mu.Lock()
	if h.closed || h.closing {
		h.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrClosed, h.path)
	}
	h.closing = true
	h.mu.Unlock()

	var err error
	if h.lock != nil {
		if h.stop != nil {
			close(h.stop)
			h.stopWG.Wait()
		}
		err = h.Flush(context.Background())
		if err == nil {
			h.saveDigest(context.Background())
			err = h.finish()
		}
		if err == nil {
			h.saveAcked(context.Background())
		}
	}
	var own *scanResult
	h.mu.Lock()
	h.closed = true
	if h.lock != nil && err == nil {
		sc := h.ownScan()
		own = &sc
	}
	h.mu.Unlock()
	if cerr := h.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("handle: close %q: %w", h.path, cerr)
	}
	if own != nil && err == nil {
		h.saveOwnChecked(context.Background(), *own)
	}
	h.parentMu.Lock()
	if h.parent != nil {
		h.parent.Close()
	}
	h.parentMu.Unlock()
	if h.lock != nil {
		if uerr := h.lock.unlock(); err == nil && uerr != nil {
			err = fmt.Errorf("handle: unlock %q: %w", h.path, uerr)
		}
	}
	return err
}

// finish ends a write handle's session: a zstd log that was written to gets
// a tail frame, or a compaction when the store asks for one. Called by
// Close after the last flush, with the lock still held.
func (h *fileHandle) finish() error {
	if h.enc.z == nil || !h.wrote {
		return nil
	}
	if h.store.cfg.compactOnClose {
		return h.store.rewriteFile(context.Background(), h.hdr.ID, location{path: h.path, enc: h.enc}, h.enc)
	}
	h.mu.Lock()
	at := h.size
	tail := eventlog.AppendTailFrame(nil, at, h.lastFrame[0], h.lastFrame[1], h.next)
	h.mu.Unlock()
	if err := h.write(false, at, tail, []int{0}); err != nil {
		return fmt.Errorf("handle: close %q: writing the tail frame: %w", h.path, err)
	}
	h.mu.Lock()
	h.size += int64(len(tail))
	h.mu.Unlock()
	return nil
}
