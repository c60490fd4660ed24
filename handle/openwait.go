package handle

import (
	"context"
	"errors"
	"time"
)

// lockPoll is how often OpenWhenFree tries again while the writer lock is
// held.
const lockPoll = 250 * time.Millisecond

// OpenWhenFree opens session id of st for writing, waiting up to wait for
// the writer lock while another writer holds it: what a supervisor needs
// when it restarts an agent it killed. A file store's lock dies with its
// process, so the first try succeeds; a JetStream lease outlives a killed
// writer by up to its TTL, so pass the store's lease TTL as wait. waiting,
// if not nil, is called once, when the first try finds the lock held.
// After wait (or when ctx ends) it returns the last ErrLocked (or ctx's
// error); any other error at once.
func OpenWhenFree(ctx context.Context, st Store, id string, wait time.Duration, waiting func()) (Handle, error) {
	deadline := time.Now().Add(wait)
	for tried := false; ; tried = true {
		h, err := st.Open(ctx, id, ReadWrite)
		if !errors.Is(err, ErrLocked) || !time.Now().Before(deadline) {
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
