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
	return AppendFlushEach(ctx, h, n, appenders, func(int64) eventlog.Event { return e })
}

// AppendFlushEach is AppendFlush with the i-th event appended (from 0)
// made by event(i): a workload's, say.
func AppendFlushEach(ctx context.Context, h handle.Handle, n int64, appenders int, event func(i int64) eventlog.Event) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, appenders)
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
				if _, err := h.Append(ctx, event(i)); err != nil {
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
