package loadgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// AppendFlush has appenders goroutines Append e and Flush, each waiting
// for its own event to be durable, until n events were appended; it
// returns their errors joined.
func AppendFlush(ctx context.Context, h handle.Handle, n int64, appenders int, e eventlog.Event) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, appenders)
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= n {
				if _, err := h.Append(ctx, e); err != nil {
					errs[a] = err
					return
				}
				if err := h.Flush(ctx); err != nil {
					errs[a] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
