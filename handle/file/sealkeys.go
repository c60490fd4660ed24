package file

import (
	"context"
	"fmt"
	"os"

	"filippo.io/age"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// The data keys of a sealed session (docs/format.md §11) change only by
// appending key records: a recipient added gets an envelope of every data
// key, and a rotation a new key for the rows after it. Both run between
// writers, under the session's writer lock; a writer that opens next
// seals under the newest key. Shredding destroys every envelope.

// AddRecipients wraps every data key of sealed session id for rs and
// appends the key records, durably, under the session's writer lock
// (ErrLocked while a writer holds it): the new recipients read the whole
// log, its derived data included. The store must hold every key of the
// session (its identities open them, or it made them).
func (s *Store) AddRecipients(ctx context.Context, id string, rs ...age.Recipient) error {
	return s.appendKeys(ctx, id, func(b *fileBackend, envs []seal.Envelope) ([]byte, error) {
		return sealing.WrapAll(id, b.sealed.kr, envs, b.sealed.layout(), b.path, rs...)
	})
}

// RotateKey starts a new data key for sealed session id, wrapped for rs,
// and appends its key records durably, under the session's writer lock:
// the rows appended after it are sealed with it (and the session's
// derived data), the rows before keep theirs. Use it before a key has
// sealed seal.MaxRecordsPerKey records, or to give the rows to come to
// other recipients than those before (the old recipients keep reading
// the old rows). The store reads the session first (its identities must
// open its keys).
func (s *Store) RotateKey(ctx context.Context, id string, rs ...age.Recipient) error {
	return s.appendKeys(ctx, id, func(b *fileBackend, envs []seal.Envelope) ([]byte, error) {
		return sealing.Rotate(id, b.sealed.kr, envs, b.sealed.layout(), rs...) // this process writes under it next
	})
}

// appendKeys opens sealed session id for writing (which recovers it, and
// reads its key records), appends the key records records makes, and
// closes it.
func (s *Store) appendKeys(ctx context.Context, id string, records func(b *fileBackend, envs []seal.Envelope) ([]byte, error)) error {
	lock, err := s.lockSession(ctx, id)
	if err != nil {
		return err
	}
	b, sc, err := s.openBackend(ctx, id, os.O_RDWR, lock)
	if err != nil {
		lock.unlock()
		return err
	}
	err = func() error {
		if b.sealed == nil {
			return fmt.Errorf("%w: %s", handle.ErrNotSealed, b.path)
		}
		recs, err := records(b, sc.envs)
		if err != nil {
			return err
		}
		return b.appendRecords(recs)
	}()
	if cerr := b.Close(ctx, err == nil); err == nil {
		err = cerr
	}
	return err
}

// appendRecords writes key records at the end of the log, durably (a
// torn tail is cut first), where a writer's next rows go: records of a
// key precede the rows it seals.
func (b *fileBackend) appendRecords(recs []byte) error {
	b.mu.Lock()
	cut, at := b.cutTorn, b.size
	b.mu.Unlock()
	if err := b.write(cut, at, recs, []int{0}); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cutTorn = false
	b.keys = append(b.keys, recordSpans(at, recs, b.sealed.layout())...)
	b.size += int64(len(recs))
	b.wrote = true // a zstd log gets a tail frame after them
	return nil
}

// recordSpans returns where the key records recs, written at offset at,
// stand: {offset, length}, as envelopesOf gives them.
func recordSpans(at int64, recs []byte, layout seal.Encoding) [][2]int64 {
	var out [][2]int64
	for off := 0; off < len(recs); {
		n := 0
		if layout == seal.Zstd {
			n = 8 + int(uint32(recs[off+4])|uint32(recs[off+5])<<8|uint32(recs[off+6])<<16|uint32(recs[off+7])<<24)
			out = append(out, [2]int64{at + int64(off), int64(n)})
		} else {
			for recs[off+n] != '\n' {
				n++
			}
			out = append(out, [2]int64{at + int64(off), int64(n)})
			n++
		}
		off += n
	}
	return out
}

// lockSession takes the writer lock of existing session id (ErrNotFound
// when there is none, ErrLocked while a writer holds it).
func (s *Store) lockSession(ctx context.Context, id string) (writerLock, error) {
	if _, err := s.existing(ctx, id); err != nil {
		return nil, err
	}
	return s.lockMarked(id)
}
