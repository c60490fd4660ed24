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
func (s *Store) headers(ctx context.Context) ([]eventlog.Header, error) {
	ids, err := s.ids(ctx)
	if err != nil {
		return nil, err
	}
	var out []eventlog.Header
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
		hdr, _, err := eventlog.ReadHeader(bytes.NewReader(first.Data), s.path(id))
		if err != nil || hdr.ID != id {
			continue
		}
		out = append(out, hdr)
	}
	return out, nil
}

// Tree returns the store's sessions as a forest, from their headers alone;
// see handle.Store.
func (s *Store) Tree(ctx context.Context) ([]*handle.Node, error) {
	hdrs, err := s.headers(ctx)
	if err != nil {
		return nil, err
	}
	infos := make([]handle.Info, len(hdrs))
	for i, h := range hdrs {
		infos[i] = handle.Info{ID: h.ID, Path: s.path(h.ID), Header: h}
	}
	return handle.TreeOf(infos), nil
}

// Children returns the headers of the sessions forked or spawned from id;
// see handle.Store.
func (s *Store) Children(ctx context.Context, id string) ([]eventlog.Header, error) {
	if err := handle.CheckID(id); err != nil {
		return nil, err
	}
	hdrs, err := s.headers(ctx)
	if err != nil {
		return nil, err
	}
	return handle.ChildrenIn(hdrs, id), nil
}

// Ancestors returns the headers of id's parent, its parent's parent, and
// so on, nearest first; see handle.Store.
func (s *Store) Ancestors(ctx context.Context, id string) ([]eventlog.Header, string, error) {
	if err := handle.CheckID(id); err != nil {
		return nil, "", err
	}
	hdrs, err := s.headers(ctx)
	if err != nil {
		return nil, "", err
	}
	chain, gone, ok := handle.AncestorsIn(hdrs, id)
	if !ok {
		return nil, "", fmt.Errorf("%w: %s in stream %s", handle.ErrNotFound, id, s.name)
	}
	return chain, gone, nil
}
