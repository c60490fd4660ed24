package core_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/stretchr/testify/require"
)

// IDs made in one millisecond by one source are distinct and sort in the
// order they were made, whatever goroutine asked.
func TestIDSourceMonotonic(t *testing.T) {
	src := core.NewIDSource()
	at := time.UnixMilli(1764450000000)
	var prev string
	for range 1000 {
		id, err := src.New(at)
		require.NoError(t, err)
		require.Greater(t, id, prev)
		prev = id
	}
	var mu sync.Mutex
	var all []string
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				id, err := src.New(at)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all = append(all, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(all)
	require.Len(t, slices.Compact(all), 1600, "no repeats")
}
