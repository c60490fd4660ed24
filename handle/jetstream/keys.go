package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"filippo.io/age"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// The data keys of a sealed session (docs/format.md §11) change only by
// appending key records, as on files: a recipient added gets an envelope
// of every data key, and a rotation a new key for the rows after it. Both
// publish one message of key records after the subject's last, under the
// session's lease; a writer that opens next seals under the newest key.

// AddRecipients wraps every data key of sealed session id for rs and
// publishes the key records, under the session's lease (handle.ErrLocked
// while a writer holds it): the new recipients read the whole log, its
// derived data included. The store must hold every key of the session
// (its identities open them, or it made them).
func (s *Store) AddRecipients(ctx context.Context, id string, rs ...age.Recipient) error {
	return s.appendKeys(ctx, id, func(b *jsBackend) ([]byte, error) {
		return sealing.WrapAll(id, b.sealed.kr, b.envs, seal.Raw, b.path, rs...)
	})
}

// RotateKey starts a new data key for sealed session id, wrapped for rs,
// and publishes its key records under the session's lease: the rows
// appended after it are sealed with it (and the session's derived data),
// the rows before keep theirs. The store reads the session first (its
// identities must open its newest key).
func (s *Store) RotateKey(ctx context.Context, id string, rs ...age.Recipient) error {
	return s.appendKeys(ctx, id, func(b *jsBackend) ([]byte, error) {
		return sealing.Rotate(id, b.sealed.kr, b.envs, seal.Raw, rs...) // this store writes under it next
	})
}

// appendKeys opens sealed session id for writing (which reads its key
// records and finds a torn tail, cut by the publish), publishes the key
// records records makes after its last message, and releases the lease.
func (s *Store) appendKeys(ctx context.Context, id string, records func(b *jsBackend) ([]byte, error)) error {
	if !eventlog.ValidID(id) {
		return fmt.Errorf("%w: %q", handle.ErrInvalidID, id)
	}
	if _, err := s.head(ctx, id); err != nil {
		return err
	}
	l, err := s.acquire(ctx, id)
	if err != nil {
		return err
	}
	defer l.release()
	b, _, err := s.open(ctx, id, true, l, false)
	if err != nil {
		return err
	}
	if b.sealed == nil {
		return fmt.Errorf("%w: %s", handle.ErrNotSealed, b.path)
	}
	recs, err := records(b)
	if err != nil {
		return err
	}
	return b.write(ctx, recs, nil, true)
}

// Shred destroys every key record of sealed session id (handle.Shredder;
// see shredOne); with descendants, its forks and children, and theirs,
// first (those not sealed are left as they are). The report lists id
// first.
func (s *Store) Shred(ctx context.Context, id string, descendants bool) (handle.ShredReport, error) {
	var rep handle.ShredReport
	if err := s.shredTree(ctx, id, descendants, true, map[string]bool{}, &rep); err != nil {
		return rep, err
	}
	if n := len(rep.Shredded); n > 1 {
		rep.Shredded = append([]string{rep.Shredded[n-1]}, rep.Shredded[:n-1]...)
	}
	return rep, nil
}

func (s *Store) shredTree(ctx context.Context, id string, descendants, root bool, visited map[string]bool, rep *handle.ShredReport) error {
	if visited[id] {
		return nil
	}
	visited[id] = true
	if descendants {
		kids, err := s.Children(ctx, id)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := s.shredTree(ctx, k.ID, true, false, visited, rep); err != nil {
				return err
			}
		}
	}
	n, err := s.shredOne(ctx, id)
	if !root && errors.Is(err, handle.ErrNotSealed) {
		return nil
	}
	if err != nil {
		return err
	}
	rep.Shredded, rep.Envelopes = append(rep.Shredded, id), rep.Envelopes+n
	return nil
}

// shredOne destroys every key record of sealed session id, so that its
// content cannot be read with any identity (docs/format.md §11,
// "Shredding"), and returns how many it destroyed: under the session's
// lease, the subject is rewritten in one atomic batch that rolls it up,
// at the same message boundaries, every key record replaced by one of
// the same length holding nothing of its key (a torn tail is cut); its
// derived data is dropped and the keys this store kept forgotten. The
// session stays, unreadable. A session with forks is refused
// (*handle.DependentsError: they read its rows; shred them first), as is
// a log larger than one atomic batch. Out of its reach: the rolled-up
// messages' bytes until each replica's server compacts its blocks, stream
// backups, snapshots, mirrors and sourced streams, and keys in the memory
// of processes that opened the session.
func (s *Store) shredOne(ctx context.Context, id string) (int, error) {
	if !eventlog.ValidID(id) {
		return 0, fmt.Errorf("%w: %q", handle.ErrInvalidID, id)
	}
	if _, err := s.head(ctx, id); err != nil {
		return 0, err
	}
	l, err := s.acquire(ctx, id)
	if err != nil {
		return 0, err
	}
	defer l.release()
	children, err := s.Children(ctx, id)
	if err != nil {
		return 0, err
	}
	var forks []string
	for _, c := range children {
		if c.Parent != nil && c.Parent.Mode == eventlog.ModeFork && !s.shredded(ctx, c.ID) {
			forks = append(forks, c.ID)
		}
	}
	if len(forks) > 0 {
		return 0, &handle.DependentsError{ID: id, Dependents: forks, Op: "shred", Fix: "they read its rows: shred them first"}
	}
	first, err := s.head(ctx, id)
	if err != nil {
		return 0, err
	}
	subj, path := s.Subject(id), s.path(id)
	last, err := s.tailRef(ctx, subj)
	if err != nil {
		return 0, fmt.Errorf("jetstream: shred %s: %w", path, err)
	}
	var msgs []*natsjs.RawStreamMsg
	var log []byte
	for m, err := range s.messages(ctx, subj, first.Sequence, last.ss) {
		if err != nil {
			return 0, fmt.Errorf("jetstream: shred %s: %w", path, err)
		}
		msgs = append(msgs, m)
		log = append(log, m.Data...)
	}
	if len(msgs) == 0 || msgs[len(msgs)-1].Sequence != last.ss {
		return 0, fmt.Errorf("jetstream: shred %s: the subject changed while it was read", path)
	}
	sl, err := s.sniff(id, msgs[0].Data)
	if err != nil {
		return 0, err
	}
	if sl == nil {
		return 0, fmt.Errorf("%w: %s", handle.ErrNotSealed, path)
	}
	fr, err := seal.Check(bytes.NewReader(log), seal.Raw, path)
	if err != nil {
		return 0, err
	}
	log = log[:fr.End]
	n := 0
	for _, e := range fr.Envelopes {
		if e.Shredded {
			continue
		}
		b, err := seal.Shred(seal.Raw, log[e.Offset:e.Offset+e.Len])
		if err != nil {
			return 0, fmt.Errorf("jetstream: shred %s: %w", path, err)
		}
		copy(log[e.Offset:], b)
		n++
	}
	var out []*nats.Msg
	off := 0
	for _, m := range msgs {
		end := min(off+len(m.Data), len(log))
		if end > off {
			nm := &nats.Msg{Subject: subj, Data: log[off:end], Header: nats.Header{}}
			for _, k := range []string{hdrOff, hdrSeq} {
				if v := m.Header.Get(k); v != "" {
					nm.Header.Set(k, v)
				}
			}
			out = append(out, nm)
		}
		off += len(m.Data)
	}
	if err := s.replace(ctx, subj, last.ss, out); err != nil {
		return 0, fmt.Errorf("jetstream: shred %s: %w", path, err)
	}
	s.dropDerived(ctx, id)
	s.keys.Forget(id)
	s.cfg.hc.Logger.Info("session shredded", "id", id, "envelopes", n)
	return n, nil
}

// shredded reports whether session id is sealed and every key record at
// its start is shredded.
func (s *Store) shredded(ctx context.Context, id string) bool {
	first, err := s.firstMsg(ctx, s.Subject(id))
	if err != nil {
		return false
	}
	sl, err := s.sniff(id, first.Data)
	if err != nil || sl == nil {
		return false
	}
	for _, e := range sl.head.Envelopes {
		if !e.Shredded {
			return false
		}
	}
	return true
}
