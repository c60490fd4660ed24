package harness

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/bench/workload"
)

func TestGroupCommitCommitsEveryEventOnceInOrder(t *testing.T) {
	for _, appenders := range []int{1, 8, 64} {
		t.Run("", func(t *testing.T) {
			var mu sync.Mutex
			var seqs []int64
			g := newGroupCommit(func(first int64, batch []workload.Event) error {
				mu.Lock()
				defer mu.Unlock()
				for i := range batch {
					seqs = append(seqs, first+int64(i))
				}
				return nil
			})
			const each = 50
			var wg sync.WaitGroup
			for range appenders {
				wg.Go(func() {
					for range each {
						require.NoError(t, g.Append(workload.Event{Type: "t"}))
					}
				})
			}
			wg.Wait()
			require.Len(t, seqs, appenders*each)
			for i, s := range seqs {
				require.Equal(t, int64(i), s)
			}
			require.LessOrEqual(t, g.Commits(), int64(appenders*each))
			require.Positive(t, g.Commits())
		})
	}
}

func TestGroupCommitFailureFailsTheBatchAndLaterAppends(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	g := newGroupCommit(func(int64, []workload.Event) error { calls++; return boom })
	require.ErrorIs(t, g.Append(workload.Event{}), boom)
	require.ErrorIs(t, g.Append(workload.Event{}), boom)
	require.Equal(t, 1, calls, "a failed group commit is not retried")
}
