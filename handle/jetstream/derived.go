package jetstream

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/internal/sealing"
)

// Derived data (replay's stored states) lives in the KV bucket
// <prefix>_derived under <ID>.<key in base64url>. Like the file store's
// cache it is derived: losing it costs a replay, never an event. A value
// larger than a message is not kept.

func derivedKey(id, key string) string {
	return id + "." + base64.RawURLEncoding.EncodeToString([]byte(key))
}

// derivedBucket returns the bucket, created on first use.
func (s *Store) derivedBucket(ctx context.Context) (natsjs.KeyValue, error) {
	s.derivedMu.Lock()
	defer s.derivedMu.Unlock()
	if s.derived != nil {
		return s.derived, nil
	}
	kv, err := s.bucket(ctx, s.cfg.prefix+"_derived", "sessionlog derived data (rebuildable)", s.stream.CachedInfo().Config.Replicas)
	if err != nil {
		return nil, err
	}
	s.derived = kv
	return kv, nil
}

// getDerived returns the derived data stored under key for session id, or
// an error wrapping handle.ErrNotFound.
func (s *Store) getDerived(ctx context.Context, id, key string) ([]byte, error) {
	kv, err := s.derivedBucket(ctx)
	if errors.Is(err, natsjs.ErrBucketNotFound) {
		return nil, fmt.Errorf("%w: no derived %q for %s", handle.ErrNotFound, key, id) // read-only: none made
	}
	if err != nil {
		return nil, err
	}
	var e natsjs.KeyValueEntry
	err = s.do(ctx, "derived data of "+id, func(ctx context.Context) error {
		e, err = kv.Get(ctx, derivedKey(id, key))
		return err
	})
	if errors.Is(err, natsjs.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: no derived %q for %s", handle.ErrNotFound, key, id)
	}
	if err != nil {
		return nil, err
	}
	sl, err := s.derivedSealing(ctx, id)
	if err != nil || sl == nil {
		return e.Value(), err
	}
	data, err := sealing.OpenBlob(sl.kr, id, key, e.Value())
	if err != nil {
		return nil, fmt.Errorf("%w: derived %q for %s: %w", handle.ErrNotFound, key, id, err)
	}
	return data, nil
}

// putDerived stores derived data under key for session id: sealed under
// its newest data key when the session is sealed, and not kept when the
// store holds none.
func (s *Store) putDerived(ctx context.Context, id, key string, data []byte) error {
	sl, err := s.derivedSealing(ctx, id)
	if err != nil {
		return err
	}
	if sl != nil {
		if data, err = sealing.SealBlob(sl.kr, id, key, data); err != nil {
			return err
		}
	}
	if len(data) > s.maxMsg {
		return fmt.Errorf("jetstream: derived %q for %s: %d bytes do not fit a message", key, id, len(data))
	}
	kv, err := s.derivedBucket(ctx)
	if err != nil {
		return err
	}
	return s.do(ctx, "derived data of "+id, func(ctx context.Context) error {
		_, err := kv.Put(ctx, derivedKey(id, key), data)
		return err
	})
}

// deleteDerived drops the derived data under key for session id.
func (s *Store) deleteDerived(ctx context.Context, id, key string) error {
	kv, err := s.derivedBucket(ctx)
	if err != nil {
		return err
	}
	return s.do(ctx, "derived data of "+id, func(ctx context.Context) error { return kv.Purge(ctx, derivedKey(id, key)) })
}

// dropDerived drops every derived value of session id, if the bucket
// exists.
func (s *Store) dropDerived(ctx context.Context, id string) {
	kv, err := s.js.KeyValue(ctx, s.cfg.prefix+"_derived")
	if err != nil {
		return
	}
	keys, err := kv.ListKeysFiltered(ctx, id+".>")
	if err != nil {
		return
	}
	for k := range keys.Keys() {
		kv.Purge(ctx, k)
	}
}
