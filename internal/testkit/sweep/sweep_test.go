package sweep

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		env        string
		full, long bool
		size       int
	}{
		{"", false, false, 1},
		{"0", false, false, 1},
		{"full", true, false, 2},
		{"1", true, false, 2},
		{"long", true, true, 3},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(Env, tc.env)
			require.Equal(t, tc.full, Full())
			require.Equal(t, tc.long, Long())
			require.Equal(t, tc.size, Size(1, 2, 3))
		})
	}
}

func TestPoints(t *testing.T) {
	t.Setenv(Env, "")
	for _, tc := range []struct {
		n, k int
		key  string
	}{
		{76, 8, "a"}, {76, 8, "b"}, {10, 8, "a"}, {9, 3, "c"}, {1, 3, "a"}, {100, 1, "x"},
	} {
		got := Points(tc.n, tc.k, tc.key)
		require.Equal(t, got, Points(tc.n, tc.k, tc.key), "deterministic")
		require.Equal(t, tc.n-1, got[len(got)-1], "the last point is always in")
		require.LessOrEqual(t, len(got), tc.k+1, "about k points: %v", got)
		for i := 1; i < len(got); i++ {
			require.Less(t, got[i-1], got[i], "ascending: %v", got)
		}
		require.GreaterOrEqual(t, got[0], 0)
	}
	require.NotEqual(t, Points(76, 8, "a"), Points(76, 8, "b"), "keys pick different points")
	require.Equal(t, []int{0, 1, 2}, Points(3, 8, "a"), "k ≥ n: all")
	require.Empty(t, Points(0, 8, "a"))

	t.Setenv(Env, "full")
	require.Len(t, Points(76, 8, "a"), 76)
}
