package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"filippo.io/age"

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

// ErrNotSealed is returned by AddRecipients and RotateKey on a session
// that is not sealed.
var ErrNotSealed = errors.New("jetstream: the session is not sealed")

// AddRecipients wraps every data key of sealed session id for rs and
// publishes the key records, under the session's lease (handle.ErrLocked
// while a writer holds it): the new recipients read the whole log, its
// derived data included. The store must hold every key of the session
// (its identities open them, or it made them).
func (s *Store) AddRecipients(ctx context.Context, id string, rs ...age.Recipient) error {
	return s.appendKeys(ctx, id, func(b *jsBackend) ([]byte, error) {
		var recs []byte
		for _, k := range keyIDs(b.envs) {
			key, err := b.sealed.kr.Key(k)
			if err != nil {
				return nil, sealing.NoKey(err, b.path)
			}
			wrapped, err := seal.Wrap(id, key, rs...)
			if err != nil {
				return nil, err
			}
			for _, w := range wrapped {
				recs = seal.AppendKeyRecord(recs, seal.Raw, k, w)
			}
		}
		return recs, nil
	})
}

// RotateKey starts a new data key for sealed session id, wrapped for rs,
// and publishes its key records under the session's lease: the rows
// appended after it are sealed with it (and the session's derived data),
// the rows before keep theirs. The store reads the session first (its
// identities must open its newest key).
func (s *Store) RotateKey(ctx context.Context, id string, rs ...age.Recipient) error {
	return s.appendKeys(ctx, id, func(b *jsBackend) ([]byte, error) {
		next := sealing.Newest(b.envs) + 1
		key, err := seal.NewKey(next)
		if err != nil {
			return nil, err
		}
		wrapped, err := seal.Wrap(id, key, rs...)
		if err != nil {
			return nil, err
		}
		var recs []byte
		for _, w := range wrapped {
			recs = seal.AppendKeyRecord(recs, seal.Raw, next, w)
		}
		b.sealed.kr.AddKey(key) // this store writes under it next
		return recs, nil
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
		return fmt.Errorf("%w: %s", ErrNotSealed, b.path)
	}
	recs, err := records(b)
	if err != nil {
		return err
	}
	return b.write(ctx, recs, nil, true)
}

// keyIDs returns the numbers of the data keys envs wrap, sorted.
func keyIDs(envs []seal.Envelope) []uint32 {
	var out []uint32
	for _, e := range envs {
		if !slices.Contains(out, e.Key) {
			out = append(out, e.Key)
		}
	}
	slices.Sort(out)
	return out
}
