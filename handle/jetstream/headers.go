package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// headers returns the header of every session on the stream, from each
// subject's first message (one direct get a session): a session whose
// header cannot be read is left out (Stat and Open report it), as is one
// CreateFrom is still making.
func (s *Store) headers(ctx context.Context) ([]handle.Info, error) {
	ids, err := s.ids(ctx)
	if err != nil {
		return nil, err
	}
	var out []handle.Info
	for _, id := range ids {
		first, err := s.firstMsg(ctx, s.Subject(id))
		switch {
		case errors.Is(err, natsjs.ErrMsgNotFound):
			continue // deleted meanwhile
		case err != nil:
			return nil, fmt.Errorf("jetstream: reading the header of %s: %w", s.path(id), err)
		case incomplete(first):
			continue
		}
		s.read.Add(int64(len(first.Data)))
		var hdr eventlog.Header
		if sl, err := s.sniff(id, first.Data); err != nil {
			continue
		} else if sl != nil {
			hdr = clearHeader(sl.head.Clear) // what it shows without a key
		} else if hdr, _, err = eventlog.ReadHeader(bytes.NewReader(first.Data), s.path(id)); err != nil {
			continue
		}
		if hdr.ID != id {
			continue
		}
		out = append(out, handle.Info{ID: id, Path: s.path(id), Header: hdr})
	}
	return out, nil
}
