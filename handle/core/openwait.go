package core

import (
	"github.com/sessionlog/sessionlog/handle"

	"context"
	"errors"
	"time"
)

// lockPoll is how often openWhenFree tries again while the writer lock is
// held.
const lockPoll = 250 * time.Millisecond

// openWhenFree is Store.OpenWhenFree over st.
func openWhenFree(ctx context.Context, st handle.Store, id string, wait time.Duration, waiting func()) (handle.Handle, error) {
	deadline := time.Now().Add(wait)
	for tried := false; ; tried = true {
		h, err := st.Open(ctx, id, handle.ReadWrite)
		if !errors.Is(err, handle.ErrLocked) || !time.Now().Before(deadline) {
			return h, err
		}
		if !tried && waiting != nil {
			waiting()
		}
		t := time.NewTimer(min(lockPoll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
