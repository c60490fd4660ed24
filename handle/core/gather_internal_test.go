package core

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The group-commit leader's wait: a lone appender never waits; a leader
// that expects concurrent appenders waits until they are there, or until
// the deadline when they do not come; the next leader expects what the
// last flush saw. Callers are counted, not events.
func TestGather(t *testing.T) {
	t.Run("a lone appender never waits", func(t *testing.T) {
		var mu sync.Mutex
		g := gather{}
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
		mu.Unlock()
	})
	t.Run("the deadline ends a wait for callers that do not come", func(t *testing.T) {
		var mu sync.Mutex
		g := gather{expect: 16, last: time.Microsecond}
		for range 3 {
			g.caller(false)
		}
		mu.Lock()
		require.True(t, g.wait(&mu))
		require.True(t, g.expired)
		g.flushed(time.Microsecond)
		mu.Unlock()
		require.Equal(t, 3, g.expect, "the next leader expects what this flush found")
		g.flushed(time.Hour)
		require.Equal(t, maxGather, g.last, "a slow flush waits at most maxGather")
	})
}
