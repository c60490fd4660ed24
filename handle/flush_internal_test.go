package handle

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
)

// The Flush callers a running flush carries read its outcome without the
// handle's mutex: when that flush's fsync fails, every one of them gets the
// poison, none returns nil for events that are not durable.
func TestFlushCarriedCallersGetTheFailure(t *testing.T) {
	const callers = 16
	ctx := t.Context()
	fsys := faultfs.New(afero.NewMemMapFs())
	s := NewFileStore(fsys, "/s")
	hh, err := s.Create(ctx)
	require.NoError(t, err)
	h := hh.(*core)
	for i := range callers {
		_, err := h.Append(ctx, eventlog.Event{Type: "test/carried", Data: fmt.Appendf(nil, `{"i":%d}`, i)})
		require.NoError(t, err)
	}

	release := make(chan struct{})
	fsys.SetHook(func(op faultfs.Op, name string) error {
		if op != faultfs.OpSync || name != h.Path() {
			return nil
		}
		<-release // the flush holding every event waits here
		return syscall.EIO
	})
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
		var pe *PoisonedError
		require.ErrorAs(t, err, &pe)
		require.True(t, errors.Is(err, syscall.EIO), "%v", err)
	}
	require.Equal(t, int64(-1), h.DurableSeq())
	fsys.SetHook(nil)
	require.Error(t, h.Close())
}
