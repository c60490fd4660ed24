package handle

import (
	"context"
	"errors"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
)

// ErrLineage: a fork whose parent is missing, or ends before the fork
// point; wrapped by *LineageError.
var ErrLineage = errors.New("handle: lineage broken")

// maxForkDepth bounds a chain of forks; a longer one is taken for a cycle.
const maxForkDepth = 256

// LineageError names the missing piece of a fork's logical log.
type LineageError struct {
	Path   string // the fork's file
	Parent string // the parent's ID
	Seq    int64  // the fork point
	Reason string
}

// Error implements error.
func (e *LineageError) Error() string {
	return fmt.Sprintf("handle: lineage of %q (forked from %s at seq %d): %s", e.Path, e.Parent, e.Seq, e.Reason)
}

// Unwrap returns ErrLineage.
func (e *LineageError) Unwrap() error { return ErrLineage }

// parentHandle returns a read-only handle on the fork's parent, opened on
// first need and kept until the fork's handle closes.
func (h *fileHandle) parentHandle(ctx context.Context, p eventlog.Parent) (*fileHandle, error) {
	h.parentMu.Lock()
	defer h.parentMu.Unlock()
	if h.parent != nil {
		return h.parent, nil
	}
	h.mu.Lock()
	closed := h.closed || h.closing
	h.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: %q", ErrClosed, h.path)
	}
	ph, err := h.store.Open(ctx, p.ID, ReadOnly)
	if errors.Is(err, ErrNotFound) {
		return nil, &LineageError{Path: h.path, Parent: p.ID, Seq: p.Seq, Reason: "the parent session is missing"}
	}
	if err != nil {
		return nil, err
	}
	h.parent = ph.(*fileHandle)
	return h.parent, nil
}

// readParent yields the parent's events from..upto and checks that the
// parent holds them all.
func (h *fileHandle) readParent(ctx context.Context, p eventlog.Parent, from, upto int64, depth int, yield func(eventlog.Event, error) bool) bool {
	return ReadInherited(ctx, h.path, p, from, upto, depth, func(ctx context.Context) (RangeReader, error) {
		ph, err := h.parentHandle(ctx, p)
		if err != nil {
			return nil, err
		}
		return ph.read, nil
	}, yield)
}
