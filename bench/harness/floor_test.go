package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRoundFloorRunsEveryRound checks that RoundFloor times each round it
// was asked for, wakes every appender in each (a round whose appenders
// did not all come back would never end), and stops them all.
func TestRoundFloorRunsEveryRound(t *testing.T) {
	for _, tc := range []struct {
		n, rounds int
		work      time.Duration
	}{{1, 3, 0}, {8, 5, time.Microsecond}, {64, 4, 0}} {
		fsyncs, xs, err := RoundFloor(t.TempDir(), tc.n, tc.work, tc.rounds, 0)
		require.NoError(t, err)
		require.Len(t, fsyncs, tc.rounds)
		require.Len(t, xs, tc.rounds)
		for i, x := range xs {
			require.GreaterOrEqual(t, x, tc.work, "round %d: an appender spun for work before it counted", i)
			require.Positive(t, fsyncs[i])
		}
	}
}

// TestRoundFloorFailsOnAFolderItCannotWrite checks that a folder where the
// round's file cannot be made is an error, not a hang.
func TestRoundFloorFailsOnAFolderItCannotWrite(t *testing.T) {
	_, _, err := RoundFloor(t.TempDir()+"/absent", 4, 0, 2, 0)
	require.Error(t, err)
}
