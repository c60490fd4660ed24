package jetstream

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// jsHandle is a handle.Handle on a JetStream session.
//
// A write handle queues appends in pending under mu; Flush makes one
// caller the leader, which publishes everything pending (one atomic batch,
// or several when it exceeds the limits) and wakes the others (group
// commit). The next publish starts only after the previous one was
// acknowledged.
type jsHandle struct {
	s      *Store
	id     string
	subj   string
	path   string
	hdr    eventlog.Header
	writer bool
	lease  *lease // nil for a reader, or with leases off

	mu        sync.Mutex
	next      int64 // next seq to assign (writer) or to read (reader)
	durable   int64
	pending   []eventlog.Event
	inflight  []eventlog.Event
	size      int64    // bytes of the log stored (complete rows)
	last      uint64   // stream seq of the subject's last message, as far as known
	index     []msgRef // the messages known, in order
	flushing  bool
	flushDone chan struct{}
	cutTorn   bool
	recovery  handle.Recovery
	err       error // poison
	closing   bool
	closed    bool
	buf       []byte

	stop   chan struct{} // stops lease renewal
	stopWG sync.WaitGroup

	parentMu sync.Mutex
	parent   *jsHandle

	digMu sync.Mutex
	dig   *eventlog.Digest // under mu; nil until first needed
}

func (s *Store) newHandle(hdr eventlog.Header, writer bool, l *lease) *jsHandle {
	first := hdr.FirstSeq()
	return &jsHandle{s: s, id: hdr.ID, subj: s.Subject(hdr.ID), path: s.path(hdr.ID), hdr: hdr,
		writer: writer, lease: l, next: first, durable: first - 1}
}

// created returns a write handle on a session whose header row, n bytes,
// was just published as stream seq ss, holding its lease l.
func (s *Store) created(hdr eventlog.Header, l *lease, n int, ss uint64) *jsHandle {
	h := s.newHandle(hdr, true, l)
	h.size = int64(n)
	h.last = ss
	h.index = []msgRef{{ss: ss, off: 0, seq: hdr.FirstSeq(), n: n}}
	h.startRenew()
	return h
}

// startRenew renews a write handle's lease every third of its TTL.
func (h *jsHandle) startRenew() {
	if h.lease == nil {
		return
	}
	h.stop = make(chan struct{})
	h.stopWG.Add(1)
	go func() {
		defer h.stopWG.Done()
		ticks, stop := h.s.cfg.ticker(h.s.cfg.leaseTTL / 3)
		defer stop()
		// Close ends a renewal that is still retrying.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-h.stop
			cancel()
		}()
		for {
			select {
			case <-h.stop:
				return
			case <-ticks:
				if err := h.lease.renew(ctx); err != nil {
					if ctx.Err() != nil {
						return
					}
					h.s.cfg.log.Error("lease lost; handle poisoned", "path", h.path, "err", err)
					h.mu.Lock()
					if h.err == nil {
						h.err = &handle.PoisonedError{Path: h.path, Err: err}
					}
					h.mu.Unlock()
					return
				}
			}
		}
	}()
}

func (h *jsHandle) ID() string                { return h.id }
func (h *jsHandle) Path() string              { return h.path }
func (h *jsHandle) Header() eventlog.Header   { return h.hdr }
func (h *jsHandle) Writable() bool            { return h.writer }
func (h *jsHandle) Recovery() handle.Recovery { return h.recovery }

func (h *jsHandle) Seq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.next - 1
}

func (h *jsHandle) DurableSeq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.durable
}

// usable reports why the handle cannot be used, if it cannot. Callers
// hold mu.
func (h *jsHandle) usable(write bool) error {
	switch {
	case h.closed || (write && h.closing):
		return fmt.Errorf("%w: %q", handle.ErrClosed, h.path)
	case h.err != nil:
		return h.err
	case write && !h.writer:
		return fmt.Errorf("%w: %q", handle.ErrReadOnly, h.path)
	}
	return nil
}

func (h *jsHandle) Append(ctx context.Context, events ...eventlog.Event) (int64, error) {
	return h.append(ctx, -1, events)
}

func (h *jsHandle) AppendAt(ctx context.Context, expected int64, events ...eventlog.Event) (int64, error) {
	if expected < 0 {
		return 0, &handle.ConflictError{Path: h.path, Expected: expected, Next: h.Seq() + 1}
	}
	return h.append(ctx, expected, events)
}

func (h *jsHandle) append(ctx context.Context, expected int64, events []eventlog.Event) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	batch, hasCheckpoint, err := handle.PrepareBatch(h.path, events)
	if err != nil {
		return 0, err
	}
	if hasCheckpoint {
		if err := h.initDigest(ctx); err != nil {
			return 0, err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.usable(true); err != nil {
		return 0, err
	}
	if expected >= 0 && expected != h.next {
		return 0, &handle.ConflictError{Path: h.path, Expected: expected, Next: h.next}
	}
	for i := range batch {
		batch[i].Seq = h.next + int64(i)
	}
	if hasCheckpoint && h.dig == nil {
		// A conflict dropped the digest after initDigest built it.
		return 0, &handle.ConflictError{Path: h.path, Expected: batch[0].Seq, Next: h.next}
	}
	dig, err := handle.CheckReservedBatch(h.path, batch, h.dig, hasCheckpoint)
	if err != nil {
		return 0, err
	}
	h.dig = dig
	h.next += int64(len(batch))
	h.pending = append(h.pending, batch...)
	return h.next - 1, nil
}

func (h *jsHandle) Flush(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fmt.Errorf("%w: %q", handle.ErrClosed, h.path)
	}
	target := h.next - 1
	for {
		if h.err != nil {
			return h.err
		}
		if h.durable >= target {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !h.flushing {
			if err := h.lead(ctx); err != nil {
				return err
			}
			continue
		}
		done := h.flushDone
		h.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		h.mu.Lock()
	}
}

// lead publishes everything pending. Called with mu held; releases it
// while publishing. A conflict (another writer appended) drops what was
// pending, resynchronises the handle with the subject, and is returned to
// this caller; every other failure poisons the handle.
func (h *jsHandle) lead(ctx context.Context) error {
	h.flushing = true
	batch := h.pending
	h.pending, h.inflight = nil, batch
	done := make(chan struct{})
	h.flushDone = done
	cut, at, last := h.cutTorn, h.size, h.last
	h.mu.Unlock()

	var prefix []byte
	var err error
	if cut {
		prefix, at, last, err = h.cut(ctx)
	}
	var msgs []*nats.Msg
	if err == nil {
		h.buf = h.s.enc.AppendRows(append(h.buf[:0], prefix...), batch)
		msgs = h.s.split(h.subj, h.buf, at)
		last, err = h.publishAll(ctx, msgs, last)
	}

	h.mu.Lock()
	defer close(done)
	h.flushing, h.inflight = false, nil
	if cap(h.buf) > 4<<20 {
		h.buf = nil
	}
	switch {
	case errors.Is(err, errConflict):
		return h.resync(ctx, batch)
	case err != nil:
		h.err = &handle.PoisonedError{Path: h.path, Err: err}
		h.s.cfg.log.Error("flush failed; handle poisoned", "path", h.path, "err", err)
		return nil
	}
	h.cutTorn = false
	first := last - uint64(len(msgs)) + 1
	for i, m := range msgs {
		seq := int64(-1)
		if m.Header.Get(hdrSeq) != "" {
			seq, _ = rowSeq(m.Data)
		}
		h.index = append(h.index, msgRef{ss: first + uint64(i), off: at, seq: seq, n: len(m.Data)})
		at += int64(len(m.Data))
	}
	h.size, h.last = at, last
	if len(batch) > 0 {
		h.durable = batch[len(batch)-1].Seq
	}
	return nil
}

// publishAll publishes msgs in atomic batches of at most maxBatch
// messages, each acknowledged before the next is sent, so that a failure
// leaves a prefix of whole batches.
func (h *jsHandle) publishAll(ctx context.Context, msgs []*nats.Msg, last uint64) (uint64, error) {
	for part := range slices.Chunk(msgs, h.s.cfg.maxBatch) {
		var err error
		if last, err = h.s.publish(ctx, part, last); err != nil {
			return 0, err
		}
	}
	return last, nil
}

// resync follows a conflict: another writer's messages follow ours. The
// batch and everything appended since are dropped, and the handle's tail
// is read again. Called with mu held.
func (h *jsHandle) resync(ctx context.Context, batch []eventlog.Event) error {
	dropped := len(batch) + len(h.pending)
	expected := h.next - int64(dropped)
	h.pending, h.dig = nil, nil
	info, err := h.s.Stat(ctx, h.id)
	if err == nil {
		var m msgRef
		m, err = h.tailRef(ctx)
		h.index = append(h.index, m)
		h.last, h.size = m.ss, m.off+int64(m.n)
	}
	if err != nil {
		h.err = &handle.PoisonedError{Path: h.path, Err: err}
		return h.err
	}
	h.next, h.durable = info.LastSeq+1, info.LastSeq
	h.s.cfg.log.Warn("another writer appended; batch dropped", "path", h.path, "dropped", dropped, "next", h.next)
	return &handle.ConflictError{Path: h.path, Expected: expected, Next: h.next}
}

// tailRef describes the subject's last message.
func (h *jsHandle) tailRef(ctx context.Context) (msgRef, error) { return h.s.tailRef(ctx, h.subj) }

// cut removes a torn tail before the first new publish: the messages
// holding bytes at or past its offset are deleted; the complete rows of
// the first of them are returned, to be published again ahead of the new
// ones, with the offset and the stream seq they follow.
func (h *jsHandle) cut(ctx context.Context) (prefix []byte, at int64, last uint64, err error) {
	h.mu.Lock()
	torn := h.recovery.Torn
	index := slices.Clone(h.index)
	h.mu.Unlock()
	keep := len(index)
	for keep > 0 && index[keep-1].off+int64(index[keep-1].n) > torn.Offset {
		keep--
	}
	if keep == 0 {
		return nil, 0, 0, fmt.Errorf("jetstream: %s: a torn tail in the header message", h.path)
	}
	at = index[keep-1].off + int64(index[keep-1].n)
	if keep < len(index) && index[keep].off < torn.Offset {
		m, err := h.s.leaderMsg(ctx, msgGetReq{Seq: index[keep].ss})
		if err != nil {
			return nil, 0, 0, fmt.Errorf("jetstream: cutting the torn tail of %s: %w", h.path, err)
		}
		prefix = slices.Clone(m.Data[:torn.Offset-index[keep].off])
	}
	for _, m := range slices.Backward(index[keep:]) {
		if err := h.s.deleteMsg(ctx, m.ss); err != nil {
			return nil, 0, 0, fmt.Errorf("jetstream: cutting the torn tail of %s: %w", h.path, err)
		}
	}
	h.s.cfg.log.Info("torn tail cut", "path", h.path, "offset", torn.Offset)
	h.mu.Lock()
	h.index = index[:keep]
	h.mu.Unlock()
	return prefix, at, index[keep-1].ss, nil
}

func (h *jsHandle) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		h.read(ctx, from, to, 0, yield)
	}
}

// read yields the logical log's events from..to: for a fork, the parent's
// first; it returns false when it stopped early.
func (h *jsHandle) read(ctx context.Context, from, to int64, depth int, yield func(eventlog.Event, error) bool) bool {
	return handle.ReadLogical(ctx, h.hdr, from, to, depth, h.checkUsable, h.readParent,
		func(from, to int64) bool { return h.readOwn(ctx, from, to, yield) }, yield)
}

// checkUsable is usable(false) under mu.
func (h *jsHandle) checkUsable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.usable(false)
}

// readOwn yields the events of the handle's own rows from..to (and a
// writer's unflushed ones); it returns false when it stopped early.
func (h *jsHandle) readOwn(ctx context.Context, from, to int64, yield func(eventlog.Event, error) bool) bool {
	h.mu.Lock()
	if err := h.usable(false); err != nil {
		h.mu.Unlock()
		yield(eventlog.Event{}, err)
		return false
	}
	mem := slices.Concat(h.inflight, h.pending)
	start := h.index[0]
	for _, m := range h.index[1:] {
		if m.seq >= 0 && m.seq <= from {
			start = m
		}
	}
	upto := uint64(0)
	if h.writer {
		upto = h.last // a writer's log ends where its own publishes do
	}
	known := h.index[len(h.index)-1].ss
	h.mu.Unlock()

	src := h.newMsgReader(ctx, start.ss, start.off)
	src.upto = upto
	defer src.close()
	opts := []eventlog.ReaderOption{eventlog.WithPath(h.path), eventlog.WithFrom(from)}
	if start.off > 0 {
		opts = append(opts, eventlog.WithStart(start.off, start.seq))
	}
	r := eventlog.NewReader(src, opts...)
	return handle.YieldRows(ctx, r, func(next int64) {
		if !h.writer {
			h.seen(next, src.refs, known)
		}
	}, mem, from, to, yield)
}

// seen records how far a read-only handle has read, and the messages it
// found past those it knew.
func (h *jsHandle) seen(next int64, refs []msgRef, known uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if next > h.next {
		h.next, h.durable = next, next-1
	}
	if h.index[len(h.index)-1].ss != known {
		return // another read recorded them
	}
	for _, m := range refs {
		if m.ss > known {
			h.index = append(h.index, m)
		}
	}
}

// parentHandle returns a read-only handle on the fork's parent, opened on
// first need and kept until the fork's handle closes.
func (h *jsHandle) parentHandle(ctx context.Context, p eventlog.Parent) (*jsHandle, error) {
	h.parentMu.Lock()
	defer h.parentMu.Unlock()
	if h.parent != nil {
		return h.parent, nil
	}
	h.mu.Lock()
	closed := h.closed || h.closing
	h.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: %q", handle.ErrClosed, h.path)
	}
	ph, err := h.s.Open(ctx, p.ID, handle.ReadOnly)
	if errors.Is(err, handle.ErrNotFound) {
		return nil, &handle.LineageError{Path: h.path, Parent: p.ID, Seq: p.Seq, Reason: "the parent session is missing"}
	}
	if err != nil {
		return nil, err
	}
	h.parent = ph.(*jsHandle)
	return h.parent, nil
}

// readParent yields the parent's events from..upto and checks that the
// parent holds them all.
func (h *jsHandle) readParent(ctx context.Context, p eventlog.Parent, from, upto int64, depth int, yield func(eventlog.Event, error) bool) bool {
	return handle.ReadInherited(ctx, h.path, p, from, upto, depth, func(ctx context.Context) (handle.RangeReader, error) {
		ph, err := h.parentHandle(ctx, p)
		if err != nil {
			return nil, err
		}
		return ph.read, nil
	}, yield)
}

// LogDigest returns the log digest (docs/format.md §Canonical bytes and
// digests) of every event appended so far and the seq of the next event.
// The first call reads the log once; afterwards Append keeps it current.
func (h *jsHandle) LogDigest(ctx context.Context) (string, int64, error) {
	if err := h.initDigest(ctx); err != nil {
		return "", 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.usable(false); err != nil {
		return "", 0, err
	}
	if h.dig == nil {
		return "", 0, &handle.ConflictError{Path: h.path, Expected: -1, Next: h.next}
	}
	return h.dig.String(), h.dig.Next(), nil
}

// initDigest builds the running digest from the first event if it is not
// there yet; events appended meanwhile are caught up before it is
// installed.
func (h *jsHandle) initDigest(ctx context.Context) error {
	h.digMu.Lock()
	defer h.digMu.Unlock()
	d := eventlog.NewDigest()
	for {
		h.mu.Lock()
		if h.dig != nil {
			h.mu.Unlock()
			return nil
		}
		next := h.next
		if d.Next() >= next {
			h.dig = d
			h.mu.Unlock()
			return nil
		}
		h.mu.Unlock()
		for e, err := range h.Read(ctx, d.Next(), next-1) {
			if err != nil {
				return fmt.Errorf("jetstream: computing the log digest of %q: %w", h.path, err)
			}
			d.Add(e)
		}
		if d.Next() < next {
			return fmt.Errorf("jetstream: computing the log digest of %q: the log ends at seq %d, before %d", h.path, d.Next(), next)
		}
	}
}

// Close flushes a write handle, releases its lease and closes a fork's
// parent handle. Later calls return handle.ErrClosed.
func (h *jsHandle) Close() error {
	h.mu.Lock()
	if h.closed || h.closing {
		h.mu.Unlock()
		return fmt.Errorf("%w: %q", handle.ErrClosed, h.path)
	}
	h.closing = true
	h.mu.Unlock()
	var err error
	if h.writer {
		if h.stop != nil {
			close(h.stop)
			h.stopWG.Wait()
		}
		err = h.Flush(context.Background())
	}
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.parentMu.Lock()
	if h.parent != nil {
		h.parent.Close()
	}
	h.parentMu.Unlock()
	h.lease.release()
	return err
}
