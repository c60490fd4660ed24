package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// Sealed sessions (docs/format.md §11) keep the raw sealed layout: the
// subject's payloads concatenate to the bytes a raw sealed file would
// hold. The first message holds the clear header, the key records and
// the sealed header row; each later message whole records, one a row
// (a record larger than a message is cut inside it), with Sl-Off, and
// Sl-Seq when it starts with a row — the seq the writer sealed in it, so
// that Stat and Read start near the end or a seq as in a clear log. The
// sealing is package sealing's, the file store's too: the store keeps
// the keyrings it opened (or made) per session, a writer seals its
// Write's rows under the newest key before they are cut into messages,
// and every read goes through seal.Reader, which checks every row as in
// a clear log. Derived data of a sealed session is sealed blob by blob.

// sealedLog is what a sealed session's first message shows: its head,
// and the keyring the store keeps for it.
type sealedLog struct {
	head seal.Head
	kr   *seal.Keyring
}

// sniff tells from session id's first message whether it is sealed.
func (s *Store) sniff(id string, first []byte) (*sealedLog, error) {
	if _, ok := seal.IsSealed(first); !ok {
		return nil, nil
	}
	h, sealed, err := seal.ReadHead(bytes.NewReader(first), int64(len(first)), s.path(id))
	if err != nil || !sealed {
		return nil, err
	}
	if h.Encoding != seal.Raw {
		return nil, &eventlog.CorruptError{Path: s.path(id), Seq: -1, Reason: "a sealed zstd layout on a stream that keeps raw logs"}
	}
	return &sealedLog{head: h, kr: s.keys.For(h)}, nil
}

// headerOf reads session id's header from its first message: a sealed
// one's from its sealed header row, which needs its key (an error
// wrapping seal.ErrNoKey that names the session).
func (s *Store) headerOf(id string, first []byte) (eventlog.Header, *sealedLog, error) {
	sl, err := s.sniff(id, first)
	if err != nil {
		return eventlog.Header{}, nil, err
	}
	if sl == nil {
		hdr, _, err := logfile.ReadHeader(bytes.NewReader(first), s.path(id))
		return hdr, nil, err
	}
	hdr, err := seal.NewReader(bytes.NewReader(first), seal.Raw, sl.kr, seal.WithPath(s.path(id))).Header()
	if err != nil {
		return eventlog.Header{}, nil, fmt.Errorf("jetstream: %s: %w", s.path(id), sealing.NoKey(err, s.path(id)))
	}
	return hdr, sl, nil
}

// clearHeader is what a sealed session shows without a key (Headers).
func clearHeader(c seal.ClearHeader) eventlog.Header {
	h := logfile.NewHeader(c.ID, c.CreatedAt)
	h.Parent = c.Parent
	return h
}

// plan returns how the session ns describes, whose header is hdr, is
// sealed, or nil for a clear one (as the file store decides).
func (s *Store) plan(ns core.NewSession, hdr eventlog.Header) (*sealing.Plan, error) {
	if sl := ns.SealAs; sl != nil {
		if sl.ID != hdr.ID {
			return nil, fmt.Errorf("jetstream: create %s sealed as %s: an envelope is bound to its session", hdr.ID, sl.ID)
		}
		return sealing.PlanWith(hdr, seal.Raw, sl.Envelopes, sl.Key)
	}
	parentSealed := ns.Parent != nil && ns.Parent.Sealed && hdr.Parent != nil && hdr.Parent.Mode == eventlog.ModeFork
	rs, err := sealing.Recipients(sealing.Ask{Sealed: ns.Sealed, SealFor: ns.SealFor}, parentSealed, s.cfg.hc.Recipients, s.cfg.hc.Identities)
	if errors.Is(err, sealing.ErrNoRecipient) {
		return nil, fmt.Errorf("%w: jetstream: create %s: %w", handle.ErrSealed, hdr.ID, err)
	}
	if err != nil || rs == nil {
		return nil, err
	}
	return sealing.NewPlan(hdr, seal.Raw, rs)
}

// firstMessage returns the payload of a session's first message, whose
// header is hdr: its header row, or when p seals it, the records p plans
// and the header row sealed. The store keeps p's key: its writer reads
// back without an identity.
func (s *Store) firstMessage(hdr eventlog.Header, p *sealing.Plan) ([]byte, *sealedLog, error) {
	line, err := eventlog.EncodeHeader(hdr)
	if err != nil {
		return nil, nil, err
	}
	line = append(line, '\n')
	if p == nil {
		return line, nil, nil
	}
	data, err := p.Start(line)
	if err != nil {
		return nil, nil, err
	}
	return data, &sealedLog{head: p.Head, kr: s.keys.Remember(p)}, nil
}

// logReader reads a session's log: an *eventlog.Reader, or a sealed
// log's *seal.Reader (both check every row alike; offsets are the log's).
type logReader interface {
	core.RowReader
	Header() (eventlog.Header, error)
	SkipRow() bool
	Torn() *eventlog.TornTail
	End() int64
}

var (
	_ logReader = (*eventlog.Reader)(nil)
	_ logReader = (*seal.Reader)(nil)
)

// newLogReader reads the log of session path from src, which holds its
// bytes from offset start (at a row or record whose seq is next, past the
// header) or from its start (start 0); events below from are checked,
// not returned. sl is nil for a clear log.
func newLogReader(src io.Reader, sl *sealedLog, path string, start, next, from int64) logReader {
	if sl != nil {
		opts := []seal.Option{seal.WithPath(path), seal.WithFrom(from)}
		if start > 0 {
			opts = append(opts, seal.WithStart(start, next))
		}
		return seal.NewReader(src, seal.Raw, sl.kr, opts...)
	}
	opts := []eventlog.ReaderOption{eventlog.WithPath(path), eventlog.WithFrom(from)}
	if start > 0 {
		opts = append(opts, eventlog.WithStart(start, next))
	}
	return eventlog.NewReader(src, opts...)
}

// msgSeq returns a data message's Sl-Seq.
func msgSeq(h nats.Header) (int64, bool) {
	seq, err := strconv.ParseInt(h.Get(hdrSeq), 10, 64)
	return seq, err == nil && seq >= 0
}

// lastSealedEvent finds the last event of sealed session subj from its
// last message back, first being its first message: it reads forward,
// unsealing, from the last message that starts with a row (Sl-Seq) or
// from the first; more than one message is read only when the last holds
// no whole row.
func (s *Store) lastSealedEvent(ctx context.Context, subj, path string, sl *sealedLog, first, last *natsjs.RawStreamMsg) (eventlog.Event, bool, error) {
	data, m := last.Data, last
	for {
		at, _ := msgOffset(m.Header)
		seq, starts := msgSeq(m.Header)
		if m.Sequence == first.Sequence || starts {
			if m.Sequence == first.Sequence {
				at = 0
			}
			r := newLogReader(bytes.NewReader(data), sl, path, at, seq, 0)
			var e eventlog.Event
			found := false
			for r.Next() {
				e, found = r.Event(), true
			}
			if err := r.Err(); err != nil {
				return eventlog.Event{}, false, err
			}
			if found || m.Sequence == first.Sequence {
				return e, found, nil
			}
		}
		if len(data) > 2*eventlog.MaxRowSize+s.maxMsg {
			return eventlog.Event{}, false, nil
		}
		prev, err := s.before(ctx, subj, m.Sequence, at)
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			return eventlog.Event{}, false, nil
		}
		if err != nil {
			return eventlog.Event{}, false, err
		}
		if prev.Sequence == first.Sequence {
			prev = first // its bytes as the leader holds them
		}
		data, m = slices.Concat(prev.Data, data), prev
	}
}

// sealedRows seals rows (complete rows) for b's session, and returns the
// sealed records and the seq of each record's row by its offset.
func (b *jsBackend) sealedRows(rows []byte) ([]byte, []sealing.Record, error) {
	out, recs, err := sealing.SealRows(b.sealer, nil, rows, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("jetstream: %s: %w", b.path, err)
	}
	return out, recs, nil
}

// derivedSealing returns the keyring of session id when it is sealed (its
// derived data is sealed), nil when it is clear or gone.
func (s *Store) derivedSealing(ctx context.Context, id string) (*sealedLog, error) {
	first, err := s.firstMsg(ctx, s.Subject(id))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: derived data of %s: %w", s.path(id), err)
	}
	return s.sniff(id, first.Data)
}

// rewritePlan returns how a rewrite of session id under header hdr is
// sealed: as the session is — its key records, every row under the
// newest key, which the store must hold — or nil for a clear session.
func (s *Store) rewritePlan(ctx context.Context, id string, hdr eventlog.Header) (*sealing.Plan, error) {
	sl, envs, err := s.envelopes(ctx, id)
	if err != nil || sl == nil {
		return nil, err
	}
	return sealing.PlanFrom(hdr, seal.Raw, envs, sl.kr, s.path(id))
}

// envelopes returns the head and keyring of sealed session id, and every
// key record of its log (read without a key: a recipient added later
// has its envelope after the rows it opens), added to its keyring; nil
// for a clear session.
func (s *Store) envelopes(ctx context.Context, id string) (*sealedLog, []seal.Envelope, error) {
	first, err := s.head(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	sl, err := s.sniff(id, first.Data)
	if err != nil || sl == nil {
		return nil, nil, err
	}
	fr, err := s.checkFraming(ctx, id, first.Sequence)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range fr.Envelopes {
		sl.kr.Add(e)
	}
	return sl, fr.Envelopes, nil
}

// Framing checks the framing of sealed session id's log — its clear
// header and every record's frame — without opening a record, so without
// a key (handle.SealedExporter); nil for a clear session.
func (s *Store) Framing(ctx context.Context, id string) (*seal.Framing, error) {
	if !eventlog.ValidID(id) {
		return nil, fmt.Errorf("%w: %q", handle.ErrInvalidID, id)
	}
	first, err := s.head(ctx, id)
	if err != nil {
		return nil, err
	}
	if sl, err := s.sniff(id, first.Data); err != nil || sl == nil {
		return nil, err
	}
	return s.checkFraming(ctx, id, first.Sequence)
}

// checkFraming reads the framing of the sealed log of session id, whose
// first message is at stream sequence first.
func (s *Store) checkFraming(ctx context.Context, id string, first uint64) (*seal.Framing, error) {
	src := s.newMsgReader(ctx, s.Subject(id), first, 0)
	defer src.close()
	fr, err := seal.Check(src, seal.Raw, s.path(id))
	if src.err != nil {
		return nil, fmt.Errorf("jetstream: %s: %w", s.path(id), src.err)
	}
	if err != nil {
		return nil, err
	}
	return &fr, nil
}

// SealingOf returns how session id is sealed, or nil for a clear session:
// its key records and the newest data key, which the store must hold (its
// identities open it, or it made it). A copy made with handle.Config.SealAs of
// it is sealed alike (transfer.Copy).
func (s *Store) SealingOf(ctx context.Context, id string) (*handle.Sealing, error) {
	if !eventlog.ValidID(id) {
		return nil, fmt.Errorf("%w: %q", handle.ErrInvalidID, id)
	}
	sl, envs, err := s.envelopes(ctx, id)
	if err != nil || sl == nil {
		return nil, err
	}
	var keep []seal.Envelope
	for _, e := range envs {
		if !e.Shredded {
			keep = append(keep, e)
		}
	}
	k, err := sl.kr.Key(sealing.Newest(envs))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %s: %w", s.path(id), sealing.NoKey(err, s.path(id)))
	}
	return &handle.Sealing{ID: id, Envelopes: keep, Key: k}, nil
}

// rescan reads every key record of sealed session id once into its
// keyring, for a store with identities whose key is not among the first
// records: a recipient added later has its envelope after the rows it
// opens, a key rotated to among the rows. It reports whether it read
// them.
func (s *Store) rescan(ctx context.Context, id string) bool {
	if len(s.cfg.hc.Identities) == 0 {
		return false
	}
	sl, _, err := s.envelopes(ctx, id)
	return err == nil && sl != nil
}

// ExportSealed writes sealed session id's logical log, events 0..to, to w
// as a standalone sealed raw log (handle.SealedExporter).
func (s *Store) ExportSealed(ctx context.Context, id string, w io.Writer, to int64) (int64, error) {
	return sealing.Export(ctx, s, s.enc, id, w, to)
}
