package core

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The group-commit leader's wait: a lone appender never waits; a leader
// that expects concurrent appenders waits until they are there, or until
// the deadline when they do not come, then yields so that ready appenders
// join; the next leader expects what the last flush saw. Callers are
// counted, not events.
func TestGather(t *testing.T) {
	t.Run("a lone appender never waits", func(t *testing.T) {
		var mu sync.Mutex
		g := gather{yield: func() { t.Error("a lone appender yielded") }}
		for range 3 {
			mu.Lock()
			g.caller(false)
			require.False(t, g.wait(&mu))
			g.flushed(time.Hour)
			mu.Unlock()
		}
		require.Equal(t, 1, g.expect)
	})
	t.Run("callers carried by the running flush count for the next one", func(t *testing.T) {
		g := gather{}
		for range 32 {
			g.caller(false)
		}
		var mu sync.Mutex
		mu.Lock()
		g.last = time.Hour
		require.False(t, g.wait(&mu))
		mu.Unlock()
		for range 5 {
			g.caller(true) // appended before the batch was taken
		}
		for range 27 {
			g.caller(false)
		}
		g.flushed(time.Hour)
		require.Equal(t, 64, g.expect)
	})
	t.Run("waits until the expected callers arrive", func(t *testing.T) {
		var mu sync.Mutex
		g := gather{expect: 64, last: time.Hour} // a deadline no test would wait for
		for range 32 {
			g.caller(false)
		}
		mu.Lock()
		go func() {
			for range 32 {
				mu.Lock()
				g.caller(false)
				mu.Unlock()
			}
		}()
		require.True(t, g.wait(&mu))
		require.False(t, g.expired, "woken by the callers, not by the deadline")
		require.Equal(t, 64, g.carried)
		require.Positive(t, g.took, "the next deadline knows how long they took")
		mu.Unlock()
	})
	t.Run("the deadline ends a wait for callers that do not come", func(t *testing.T) {
		var mu sync.Mutex
		g := gather{expect: 16, last: time.Microsecond, yield: func() { t.Error("yielded after the deadline") }}
		for range 3 {
			g.caller(false)
		}
		mu.Lock()
		require.True(t, g.wait(&mu))
		require.True(t, g.expired)
		require.Zero(t, g.took, "a wait the deadline ended measures no way back")
		g.flushed(time.Microsecond)
		mu.Unlock()
		require.Equal(t, 3, g.expect, "the next leader expects what this flush found")
		g.flushed(time.Hour)
		require.Equal(t, maxGather, g.last, "a slow flush waits at most maxGather")
	})
	t.Run("callers that come while the leader yields join its flush", func(t *testing.T) {
		var mu sync.Mutex
		g := gather{expect: 4, last: time.Hour}
		for range 4 {
			g.caller(false)
		}
		yields := 0
		g.yield = func() {
			yields++
			require.True(t, mu.TryLock(), "the leader yields without the mutex")
			g.caller(false) // two appenders that were ready to run
			g.caller(false)
			mu.Unlock()
		}
		mu.Lock()
		require.False(t, g.wait(&mu), "the expected callers were there: no wait")
		mu.Unlock()
		require.Equal(t, 1, yields)
		require.Equal(t, 6, g.carried)
		require.Zero(t, g.queued)
	})
	t.Run("the deadline follows the callers' way back", func(t *testing.T) {
		for _, tc := range []struct {
			name       string
			last, took time.Duration
			want       time.Duration
		}{
			{"a flush slower than the way back", time.Millisecond, 100 * time.Microsecond, time.Millisecond},
			{"a flush quicker than the way back", 10 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond},
			{"never more than maxGather", 10 * time.Microsecond, time.Hour, maxGather},
		} {
			t.Run(tc.name, func(t *testing.T) {
				g := gather{last: tc.last, took: tc.took}
				require.Equal(t, tc.want, g.deadline())
			})
		}
	})
}
