package jetstream

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
)

// A session made by CreateFrom is all or nothing (handle.Store.CreateFrom)
// although a stream cannot publish a whole log at once nor rename a
// subject. Its subject starts with a mark: a message with no payload (so
// the payloads still concatenate to the raw log) and the header Sl-Building.
// Every reader takes a subject whose first message is a mark for a session
// that does not exist: Stat and Open answer handle.ErrNotFound, List and
// Tree leave it out. The log is published after the mark, through a write
// handle holding the session's lease; once its last flush is acknowledged,
// one purge of the subject up to the header's message removes the mark,
// and the session exists whole. A CreateFrom killed before the purge
// leaves a marked subject: the retry (once the dead builder's lease has
// expired) and GC remove it.

// hdrBuilding marks the first message of a session CreateFrom is still
// publishing.
const hdrBuilding = "Sl-Building"

// errIncomplete: a subject whose first message is a CreateFrom's mark.
var errIncomplete = errors.New("jetstream: the session is still being created")

// incomplete reports whether m is a CreateFrom's mark.
func incomplete(m *natsjs.RawStreamMsg) bool { return m.Header.Get(hdrBuilding) != "" }

// createFromFlush is how many bytes of events CreateFrom appends between
// two flushes.
const createFromFlush = 4 << 20

// newHeader returns the header of the session ns describes: the stream
// keeps raw logs only (sealed or clear).
func (s *Store) newHeader(ns core.NewSession) (eventlog.Header, error) {
	if ns.Encoding != "" && ns.Encoding != handle.EncodingRaw {
		return eventlog.Header{}, fmt.Errorf("jetstream: create %s: the store keeps raw logs, not %q", ns.Header.ID, ns.Encoding)
	}
	return ns.Header, nil
}

// createFrom makes a session holding exactly events, all or nothing; see
// handle.Store.CreateFrom and the comment above for how.
func (s *Store) createFrom(ctx context.Context, ns core.NewSession, events iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	hdr, err := s.newHeader(ns)
	if err != nil {
		return handle.Info{}, err
	}
	id, subj := hdr.ID, s.Subject(hdr.ID)
	plan, err := s.plan(ns, hdr)
	if err != nil {
		return handle.Info{}, err
	}
	if first, err := s.firstMsg(ctx, subj); err == nil && !incomplete(first) {
		// Before the lease: a session with a writer exists too.
		return handle.Info{}, fmt.Errorf("%w: %s in stream %s", handle.ErrExists, id, s.name)
	}
	l, err := s.acquire(ctx, id)
	if errors.Is(err, handle.ErrLocked) {
		l, err = s.awaitBuilder(ctx, id, err)
	}
	if err != nil {
		return handle.Info{}, err
	}
	if err := s.ixCreating(ctx, hdr, plan != nil); err != nil {
		l.release()
		return handle.Info{}, fmt.Errorf("jetstream: create %s: %w", s.path(id), err)
	}
	b, h, err := s.startBuild(ctx, hdr, plan, l)
	if err != nil {
		l.release()
		return handle.Info{}, err
	}
	headerSS := b.index[0].ss
	err = appendAll(ctx, h, events)
	if err == nil {
		err = h.Flush(ctx)
	}
	if err == nil {
		// The mark goes: from here on the session exists, whole.
		err = s.purge(ctx, natsjs.WithPurgeSubject(subj), natsjs.WithPurgeSequence(headerSS))
		if err != nil {
			err = fmt.Errorf("jetstream: create %s: %w", s.path(id), err)
		}
	}
	if err != nil {
		// Nothing of it may stay; if this purge fails too, the mark keeps
		// it invisible until the retry or GC.
		if s.purge(context.WithoutCancel(ctx), natsjs.WithPurgeSubject(subj)) == nil {
			s.ixRemove(ctx, id, &hdr)
		}
		h.Close()
		return handle.Info{}, err
	}
	b.mu.Lock()
	size := b.size
	b.mu.Unlock()
	info := handle.Info{ID: id, Path: s.path(id), Encoding: handle.EncodingRaw, Header: hdr, SizeBytes: size, Sealed: plan != nil}
	// Once the mark is gone CreateFrom must not fail (and the lease's
	// release cannot make it). Its keys are written again: an index
	// rebuilt meanwhile saw no header.
	h.Close()
	if kv, err := s.ix(ctx); err == nil {
		s.ixKeys(ctx, kv, id, hdr, plan != nil)
	}
	s.cfg.hc.Logger.Debug("session created from events", "id", id, "subject", subj)
	return info, nil
}

// awaitBuilder is CreateFrom's answer to a lease held (locked, acquire's
// error) on a session that is being built: its subject starts with a
// mark. A builder killed mid-way leaves its lease held until it expires,
// so the retry waits for that, at most the lease's TTL, and takes it over:
// a retry at once succeeds. A live builder renews its lease: once the
// lease outlives the deadline first seen, or the session is not being
// built, the answer is locked.
func (s *Store) awaitBuilder(ctx context.Context, id string, locked error) (*lease, error) {
	first, err := s.firstMsg(ctx, s.Subject(id))
	if err != nil || !incomplete(first) {
		return nil, locked
	}
	held, _, _, err := (&lease{s: s, key: id}).read(ctx)
	if err != nil {
		return nil, fmt.Errorf("jetstream: lease of %s: %w", id, err)
	}
	deadline, start := held.Until, time.Now()
	s.cfg.hc.Logger.Info("waiting for the lease of a CreateFrom that stopped", "id", id, "until", time.UnixMilli(deadline))
	for time.Since(start) <= s.cfg.leaseTTL+time.Second {
		wait := time.UnixMilli(held.Until).Sub(s.cfg.hc.Now())
		if err := sleep(ctx, max(wait, backoff(0))); err != nil {
			return nil, err
		}
		l, err := s.acquire(ctx, id)
		if !errors.Is(err, handle.ErrLocked) {
			return l, err
		}
		if held, _, _, err = (&lease{s: s, key: id}).read(ctx); err != nil {
			return nil, fmt.Errorf("jetstream: lease of %s: %w", id, err)
		}
		if held.Until > deadline {
			break // renewed: its builder is at work
		}
	}
	return nil, fmt.Errorf("%w (a CreateFrom of it is at work)", locked)
}

// startBuild publishes the mark and the header of a session CreateFrom
// makes, holding its lease l, and returns a write handle on it. What a
// killed CreateFrom left on the subject is removed first: the lease is
// ours, so its builder is gone.
func (s *Store) startBuild(ctx context.Context, hdr eventlog.Header, plan *sealing.Plan, l *lease) (*jsBackend, handle.Handle, error) {
	id, subj := hdr.ID, s.Subject(hdr.ID)
	first, err := s.firstMsg(ctx, subj)
	switch {
	case err == nil && !incomplete(first):
		return nil, nil, fmt.Errorf("%w: %s in stream %s", handle.ErrExists, id, s.name)
	case err == nil:
		s.cfg.hc.Logger.Info("removing what a killed CreateFrom left", "id", id)
		if err := s.purge(ctx, natsjs.WithPurgeSubject(subj)); err != nil {
			return nil, nil, fmt.Errorf("jetstream: create %s: %w", s.path(id), err)
		}
	case !errors.Is(err, natsjs.ErrMsgNotFound):
		return nil, nil, fmt.Errorf("jetstream: create %s: %w", s.path(id), err)
	}
	line, sl, err := s.firstMessage(hdr, plan)
	if err != nil {
		return nil, nil, fmt.Errorf("jetstream: create %s: %w", id, err)
	}
	mark := &nats.Msg{Subject: subj, Header: nats.Header{}}
	mark.Header.Set(hdrBuilding, nuid.Next())
	ss, err := s.publish(ctx, []*nats.Msg{mark}, 0)
	if err == nil {
		msg := &nats.Msg{Subject: subj, Data: line, Header: nats.Header{}}
		ss, err = s.publish(ctx, []*nats.Msg{msg}, ss)
	}
	if err != nil {
		if errors.Is(err, errConflict) {
			return nil, nil, fmt.Errorf("%w: %s in stream %s", handle.ErrExists, id, s.name)
		}
		s.purge(context.WithoutCancel(ctx), natsjs.WithPurgeSubject(subj))
		return nil, nil, fmt.Errorf("jetstream: create %s: %w", s.path(id), err)
	}
	b, hc := s.created(hdr, l, len(line), ss, true, sl, plan)
	return b, core.NewHandle(b, hc), nil
}

// appendAll appends events — checked by the store core, each at the seq
// it gets — to the write handle h, flushing every createFromFlush bytes.
func appendAll(ctx context.Context, h handle.Handle, events iter.Seq2[eventlog.Event, error]) error {
	var batch []eventlog.Event
	size := 0
	put := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := h.AppendAt(ctx, batch[0].Seq, batch...); err != nil {
			return err
		}
		batch, size = batch[:0], 0
		return h.Flush(ctx)
	}
	for e, err := range events {
		if err != nil {
			return err
		}
		batch = append(batch, e)
		if size += len(e.Data) + len(e.Type); size >= createFromFlush {
			if err := put(); err != nil {
				return err
			}
		}
	}
	return put()
}

// collectIncomplete removes (or, in a dry run, lists) the subjects a
// killed CreateFrom left: marked, and no builder holding their lease (with
// leases off: marked before before). Derived data goes with its session's
// Delete.
func (s *Store) collectIncomplete(ctx context.Context, before time.Time, dryRun bool) ([]string, error) {
	ids, err := s.unsettled(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		first, err := s.firstMsg(ctx, s.Subject(id))
		if errors.Is(err, natsjs.ErrMsgNotFound) || err == nil && !incomplete(first) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("jetstream: gc: %s: %w", s.path(id), err)
		}
		if s.leases == nil && !first.Time.Before(before) {
			continue
		}
		if dryRun {
			held, err := s.WriterHeld(ctx, id)
			if err != nil {
				return out, err
			}
			if !held {
				out = append(out, s.path(id))
			}
			continue
		}
		if gone, err := s.dropIncomplete(ctx, id); err != nil || !gone {
			if err != nil {
				return out, err
			}
			continue
		}
		out = append(out, s.path(id))
	}
	return out, nil
}

// unsettled returns the sessions a CreateFrom may have left: those with
// a mark in the index (ixCreating writes it first), else, without an
// index (a read-only store), every session.
func (s *Store) unsettled(ctx context.Context) ([]string, error) {
	if s.ixScan {
		return s.ids(ctx)
	}
	kv, err := s.ix(ctx)
	if err != nil {
		return nil, err
	}
	ids, err := s.ixIDs(ctx, kv, "w.*")
	slices.Sort(ids)
	return ids, err
}

// dropIncomplete removes session id's subject if it still starts with a
// mark once its lease is taken (a builder finishing meanwhile removed the
// mark before it let the lease go); it reports whether it did.
func (s *Store) dropIncomplete(ctx context.Context, id string) (bool, error) {
	l, err := s.acquire(ctx, id)
	if errors.Is(err, handle.ErrLocked) {
		return false, nil // its builder is at work
	}
	if err != nil {
		return false, err
	}
	defer l.release()
	subj := s.Subject(id)
	first, err := s.firstMsg(ctx, subj)
	if errors.Is(err, natsjs.ErrMsgNotFound) || err == nil && !incomplete(first) {
		return false, nil
	}
	if err == nil {
		err = s.purge(ctx, natsjs.WithPurgeSubject(subj))
	}
	if err != nil {
		return false, fmt.Errorf("jetstream: gc: %s: %w", s.path(id), err)
	}
	var hdr *eventlog.Header
	if h, _, err := s.headerOf(id, first.Data); err == nil {
		hdr = &h
	}
	s.ixRemove(ctx, id, hdr)
	return true, nil
}
