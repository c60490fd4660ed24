package jetstream

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// jsBackend is a session's subject under handle's write core
// (core.Backend): a Write publishes the rows — one atomic batch, or
// several when they exceed the server's limits — expecting the subject's
// last stream seq, so that the next publish starts only after the previous
// one was acknowledged; a Read fetches the subject's messages from the one
// nearest its first seq. The lease, when there is one, is renewed by the
// core; a conflict (another writer's messages follow the expected one) is
// handed to the core, which poisons the handle with it (and Tail).
type jsBackend struct {
	s      *Store
	id     string
	subj   string
	path   string
	writer bool
	lease  *lease // nil for a reader, or with leases off
	// unredacted turns the store's redaction off for the handle.
	unredacted bool
	// sealed is a sealed log's head and keyring, nil for a clear log;
	// sealer seals a writer's rows under the newest key.
	sealed *sealedLog
	sealer *seal.Sealer
	envs   []seal.Envelope // a writer's open found these key records

	mu      sync.Mutex
	size    int64    // bytes of the log stored (complete rows)
	last    uint64   // stream seq of the subject's last message, as far as known
	index   []msgRef // the messages known, in order
	torn    *eventlog.TornTail
	cutTorn bool // the torn tail must be cut before the next publish

	buf []byte // Write's, when it republishes a cut message's rows
}

func (s *Store) newBackend(id string, writer bool, l *lease) *jsBackend {
	return &jsBackend{s: s, id: id, subj: s.Subject(id), path: s.path(id), writer: writer, lease: l}
}

// handle returns the handle on b's session, whose header is hdr and whose
// stored events end before seq next.
func (s *Store) handle(b *jsBackend, hdr eventlog.Header, next int64, torn *eventlog.TornTail) (core.Backend, core.HandleConfig) {
	red := s.cfg.hc.Redactor
	if b.unredacted {
		red = nil
	}
	return b, core.HandleConfig{Store: s.Store, Header: hdr, Path: b.path, Writer: b.writer,
		Next: next, Torn: torn, Encoder: s.enc, Policy: s.cfg.hc.Policy, Redactor: red, Logger: s.cfg.hc.Logger, Ticker: s.cfg.ticker}
}

// created returns a write handle on a session whose first message, n
// bytes, was just published as stream seq ss, holding its lease l; p is
// its sealing, or nil.
func (s *Store) created(hdr eventlog.Header, l *lease, n int, ss uint64, unredacted bool, sl *sealedLog, p *sealing.Plan) (*jsBackend, core.HandleConfig) {
	b := s.newBackend(hdr.ID, true, l)
	b.unredacted = unredacted
	if p != nil {
		b.sealed, b.sealer = sl, p.Sealer
	}
	b.size, b.last = int64(n), ss
	b.index = []msgRef{{ss: ss, off: 0, seq: hdr.FirstSeq(), n: n}}
	_, hc := s.handle(b, hdr, hdr.FirstSeq(), nil)
	return b, hc
}

func (b *jsBackend) Write(ctx context.Context, rows []byte, _, _ int64) (func(), error) {
	if b.sealer != nil {
		sealed, recs, err := b.sealedRows(rows)
		if err != nil {
			return nil, err
		}
		return nil, b.write(ctx, sealed, recs, false)
	}
	return nil, b.write(ctx, rows, nil, false)
}

// WriteAll publishes the rows as one atomic batch (core.Backend.WriteAll):
// the server stores every message of it or none, whenever the writer dies.
// A batch of more messages than one atomic batch may hold (WithMaxBatch,
// the server's jetstream.limits.max_batch_size, of messages of at most the
// server's max_payload) is refused with an error wrapping
// handle.ErrBatchTooLarge, nothing published.
func (b *jsBackend) WriteAll(ctx context.Context, rows iter.Seq2[core.Rows, error]) (func(), error) {
	var all []byte
	limit := b.s.cfg.maxBatch * b.s.maxMsg
	for r, err := range rows {
		if err != nil {
			return nil, err
		}
		if all = append(all, r.Bytes...); len(all) > limit {
			return nil, b.tooLarge(len(all) / b.s.maxMsg)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	if b.sealer != nil {
		sealed, recs, err := b.sealedRows(all)
		if err != nil {
			return nil, err
		}
		return nil, b.write(ctx, sealed, recs, true)
	}
	return nil, b.write(ctx, all, nil, true)
}

// tooLarge is the error of a batch of n messages or more that one atomic
// batch cannot hold.
func (b *jsBackend) tooLarge(n int) error {
	return fmt.Errorf("%w: jetstream: %s: a batch of %d messages or more does not fit one atomic batch of %d (jetstream.limits.max_batch_size, WithMaxBatch; messages of %d bytes); nothing written",
		handle.ErrBatchTooLarge, b.path, n, b.s.cfg.maxBatch, b.s.maxMsg)
}

// write publishes rows after the stored ones: in atomic batches of at most
// maxBatch messages, or when atomic as one, refused if larger. A torn tail
// is cut first and the complete rows of its first message published again
// ahead of rows. For a sealed log rows are sealed records, and recs says
// where each starts and the seq of its row.
func (b *jsBackend) write(ctx context.Context, rows []byte, recs []sealing.Record, atomic bool) error {
	b.mu.Lock()
	cut, at, last := b.cutTorn, b.size, b.last
	b.mu.Unlock()
	if atomic {
		// Refused before the cut: the complete rows it takes back add
		// one message at most.
		n := len(b.s.split(b.subj, rows, at, recs))
		if cut {
			n++
		}
		if n > b.s.cfg.maxBatch {
			return b.tooLarge(n)
		}
	}
	if cut {
		prefix, prefixSeq, cutAt, cutLast, err := b.cut(ctx)
		if err != nil {
			return err
		}
		b.buf = append(append(b.buf[:0], prefix...), rows...)
		rows, at, last = b.buf, cutAt, cutLast
		if recs != nil && len(prefix) > 0 {
			shifted := make([]sealing.Record, 0, len(recs)+1)
			shifted = append(shifted, sealing.Record{Off: 0, Seq: prefixSeq})
			for _, r := range recs {
				shifted = append(shifted, sealing.Record{Off: r.Off + len(prefix), Seq: r.Seq})
			}
			recs = shifted
		}
	}
	msgs := b.s.split(b.subj, rows, at, recs)
	var err error
	switch {
	case !atomic:
		last, err = b.publishAll(ctx, msgs, last)
	case len(msgs) > b.s.cfg.maxBatch:
		err = b.tooLarge(len(msgs))
	default:
		last, err = b.s.publish(ctx, msgs, last)
	}
	if cap(b.buf) > 4<<20 {
		b.buf = nil
	}
	if errors.Is(err, errConflict) {
		return &handle.ConflictError{Path: b.path, Expected: -1, Next: -1, Err: err} // the core fills in the seqs
	}
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cutTorn = false
	first := last - uint64(len(msgs)) + 1
	for i, m := range msgs {
		seq := int64(-1)
		if v, ok := msgSeq(m.Header); ok {
			seq = v
		}
		b.index = append(b.index, msgRef{ss: first + uint64(i), off: at, seq: seq, n: len(m.Data)})
		at += int64(len(m.Data))
	}
	b.size, b.last = at, last
	return nil
}

// publishAll publishes msgs in atomic batches of at most maxBatch
// messages, each acknowledged before the next is sent, so that a failure
// leaves a prefix of whole batches.
func (b *jsBackend) publishAll(ctx context.Context, msgs []*nats.Msg, last uint64) (uint64, error) {
	for part := range slices.Chunk(msgs, b.s.cfg.maxBatch) {
		var err error
		if last, err = b.s.publish(ctx, part, last); err != nil {
			return 0, err
		}
	}
	return last, nil
}

// Tail reads the subject's tail again: after a conflict, another writer's
// messages follow ours.
func (b *jsBackend) Tail(ctx context.Context) (int64, error) {
	info, err := b.s.Stat(ctx, b.id)
	if err != nil {
		return 0, err
	}
	m, err := b.tailRef(ctx)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	b.index = append(b.index, m)
	b.last, b.size = m.ss, m.off+int64(m.n)
	b.mu.Unlock()
	return info.LastSeq + 1, nil
}

// tailRef describes the subject's last message.
func (b *jsBackend) tailRef(ctx context.Context) (msgRef, error) { return b.s.tailRef(ctx, b.subj) }

// cut removes a torn tail before the first new publish: the messages
// holding bytes at or past its offset are deleted; the complete rows of
// the first of them are returned, to be published again ahead of the new
// ones, with the seq of their first row (-1 when unknown), the offset and
// the stream seq they follow.
func (b *jsBackend) cut(ctx context.Context) (prefix []byte, prefixSeq int64, at int64, last uint64, err error) {
	b.mu.Lock()
	torn := b.torn
	index := slices.Clone(b.index)
	b.mu.Unlock()
	keep := len(index)
	for keep > 0 && index[keep-1].off+int64(index[keep-1].n) > torn.Offset {
		keep--
	}
	if keep == 0 {
		return nil, -1, 0, 0, fmt.Errorf("jetstream: %s: a torn tail in the header message", b.path)
	}
	at = index[keep-1].off + int64(index[keep-1].n)
	if keep < len(index) && index[keep].off < torn.Offset {
		m, err := b.s.leaderMsg(ctx, msgGetReq{Seq: index[keep].ss})
		if err != nil {
			return nil, -1, 0, 0, fmt.Errorf("jetstream: cutting the torn tail of %s: %w", b.path, err)
		}
		prefix = slices.Clone(m.Data[:torn.Offset-index[keep].off])
		prefixSeq = index[keep].seq
	}
	for _, m := range slices.Backward(index[keep:]) {
		if err := b.s.deleteMsg(ctx, m.ss); err != nil {
			return nil, -1, 0, 0, fmt.Errorf("jetstream: cutting the torn tail of %s: %w", b.path, err)
		}
	}
	b.s.cfg.hc.Logger.Info("torn tail cut", "path", b.path, "offset", torn.Offset)
	b.mu.Lock()
	b.index = index[:keep]
	b.mu.Unlock()
	return prefix, prefixSeq, at, index[keep-1].ss, nil
}

func (b *jsBackend) Read(ctx context.Context, from int64, use func(core.RowReader)) error {
	b.mu.Lock()
	start := b.index[0]
	for _, m := range b.index[1:] {
		if m.seq >= 0 && m.seq <= from {
			start = m
		}
	}
	upto := uint64(0)
	if b.writer {
		upto = b.last // a writer's log ends where its own publishes do
	}
	known := b.index[len(b.index)-1].ss
	b.mu.Unlock()

	src := b.s.newMsgReader(ctx, b.subj, start.ss, start.off)
	src.upto = upto
	defer src.close()
	use(newLogReader(src, b.sealed, b.path, start.off, start.seq, from))
	if !b.writer && src.err == nil {
		b.seen(src.refs, known)
	}
	return nil
}

// seen records the messages a read-only handle's read found past those
// it knew.
func (b *jsBackend) seen(refs []msgRef, known uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.index[len(b.index)-1].ss != known {
		return // another read recorded them
	}
	for _, m := range refs {
		if m.ss > known {
			b.index = append(b.index, m)
		}
	}
}

// Renew renews the write handle's lease.
func (b *jsBackend) Renew(ctx context.Context) error { return b.lease.renew(ctx) }

// RenewEvery is a third of the lease's TTL; 0 (no renewals) without a
// lease.
func (b *jsBackend) RenewEvery() time.Duration {
	if b.lease == nil {
		return 0
	}
	return b.s.cfg.leaseTTL / 3
}

// Close writes a writer's index entry as the log now is (so that answers
// need not describe it again), then releases the lease.
func (b *jsBackend) Close(ctx context.Context, _ bool) error {
	if b.writer {
		b.s.ixSettle(ctx, b.id)
	}
	b.lease.release()
	return nil
}
