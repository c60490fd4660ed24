package core

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
)

// blockedBackend is a Backend whose Write waits for release and fails
// with EIO: a flush whose fsync fails.
type blockedBackend struct{ release chan struct{} }

func (b blockedBackend) Write(context.Context, []byte, int64, int64) (func(), error) {
	<-b.release
	return nil, syscall.EIO
}

func (b blockedBackend) WriteAll(context.Context, iter.Seq2[Rows, error]) (func(), error) {
	return nil, syscall.EIO
}

func (b blockedBackend) Read(context.Context, int64, func(RowReader)) error { return nil }
func (b blockedBackend) Tail(context.Context) (int64, error)                { return 0, nil }
func (b blockedBackend) RenewEvery() time.Duration                          { return 0 }
func (b blockedBackend) Renew(context.Context) error                        { return nil }
func (b blockedBackend) Close(context.Context, bool) error                  { return nil }

// The Flush callers a running flush carries read its outcome without the
// handle's mutex: when that flush's fsync fails, every one of them gets the
// poison, none returns nil for events that are not durable.
func TestFlushCarriedCallersGetTheFailure(t *testing.T) {
	const callers = 16
	ctx := t.Context()
	release := make(chan struct{})
	cfg := NewConfig(handle.Unredacted())
	h := newCore(blockedBackend{release}, HandleConfig{Header: logfile.NewHeader("01JDX3N0Q3Z8Y6W2D1V5K7M9PA", 0), Path: "blocked",
		Writer: true, Encoder: eventlog.NewEncoder(nil), Logger: cfg.Logger, Ticker: cfg.Ticker})
	for i := range callers {
		_, err := h.Append(ctx, eventlog.Event{Type: "test/carried", Data: fmt.Appendf(nil, `{"i":%d}`, i)})
		require.NoError(t, err)
	}

	errs := make(chan error, callers)
	for range callers {
		go func() { errs <- h.Flush(ctx) }()
	}
	// Every caller has entered Flush: the leader and the others are all
	// counted as carried by its flush (the batch holds every event).
	for {
		h.mu.Lock()
		entered := h.flushing && h.carried == callers
		h.mu.Unlock()
		if entered {
			break
		}
		runtime.Gosched()
	}
	close(release)
	for range callers {
		err := <-errs
		var pe *handle.PoisonedError
		require.ErrorAs(t, err, &pe)
		require.True(t, errors.Is(err, syscall.EIO), "%v", err)
	}
	require.Equal(t, int64(-1), h.DurableSeq())
	require.Error(t, h.Close())
}

// conflictBackend is a Backend whose Write reports that another writer
// appended; its Tail says where the log now ends, or fails with tailErr.
type conflictBackend struct {
	blockedBackend
	next    int64
	tailErr error
}

func (b conflictBackend) Write(context.Context, []byte, int64, int64) (func(), error) {
	return nil, &handle.ConflictError{Path: "conflict", Expected: -1, Next: -1}
}

func (b conflictBackend) Tail(context.Context) (int64, error) { return b.next, b.tailErr }

// A flush that meets another writer's append poisons the handle with a
// *ConflictError naming the seq it expected and where the log now ends;
// when the backend cannot tell where it ends, Next is -1 and the error
// says why.
func TestConflictSaysWhereTheLogEnds(t *testing.T) {
	tailErr := errors.New("tail unreadable")
	for _, tc := range []struct {
		name    string
		b       conflictBackend
		next    int64
		wantErr error
	}{
		{"tail known", conflictBackend{next: 7}, 7, nil},
		{"tail unknown", conflictBackend{next: 7, tailErr: tailErr}, -1, tailErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewConfig(handle.Unredacted())
			h := newCore(tc.b, HandleConfig{Header: logfile.NewHeader("01JDX3N0Q3Z8Y6W2D1V5K7M9PA", 0), Path: "conflict",
				Writer: true, Encoder: eventlog.NewEncoder(nil), Logger: cfg.Logger, Ticker: cfg.Ticker})
			seq, err := h.Append(t.Context(), eventlog.Event{Type: "test/conflict", Data: []byte(`{}`)})
			require.NoError(t, err)
			err = h.Flush(t.Context())
			ce, ok := errors.AsType[*handle.ConflictError](err)
			require.True(t, ok, "%v", err)
			require.ErrorAs(t, err, new(*handle.PoisonedError))
			require.Equal(t, seq, ce.Expected)
			require.Equal(t, tc.next, ce.Next)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, ce.Err)
			}
			require.ErrorAs(t, h.Close(), new(*handle.ConflictError), "the dropped event keeps the handle poisoned")
		})
	}
}
