package eventlog

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestZstdSpares checks the idle content buffers of a zstd Reader: a decode
// takes the smallest that holds its frame (none when none does), and a
// buffer returned to a full set replaces the smallest when it is larger and
// fits in spareMaxBytes.
func TestZstdSpares(t *testing.T) {
	caps := func(zs *zstdState) []int {
		var out []int
		sum := 0
		for _, s := range zs.spares {
			out = append(out, cap(s))
			sum += cap(s)
		}
		require.Equal(t, sum, zs.spareBytes, "spareBytes is the spares' capacity")
		return out
	}
	const k = 1 << 10
	zs := &zstdState{}
	for _, n := range []int{64 * k, 16 * k, 256 * k} {
		zs.spare(make([]byte, 10, n))
	}
	require.Equal(t, []int{64 * k, 16 * k, 256 * k}, caps(zs))

	b := zs.takeSpare(20 * k)
	require.Equal(t, 64*k, cap(b), "the smallest that holds 20 KiB")
	require.Empty(t, b, "a spare is empty")
	require.ElementsMatch(t, []int{16 * k, 256 * k}, caps(zs))
	require.Nil(t, zs.takeSpare(300*k), "none holds 300 KiB: none taken")
	require.ElementsMatch(t, []int{16 * k, 256 * k}, caps(zs))

	zs.spare(make([]byte, 0, 700*k)) // 972 KiB in all: fits
	require.ElementsMatch(t, []int{16 * k, 256 * k, 700 * k}, caps(zs))
	zs.spare(make([]byte, 0, 60*k)) // over 1 MiB: replaces the 16 KiB one
	require.ElementsMatch(t, []int{60 * k, 256 * k, 700 * k}, caps(zs))
	zs.spare(make([]byte, 0, 40*k)) // smaller than every spare: dropped
	require.ElementsMatch(t, []int{60 * k, 256 * k, 700 * k}, caps(zs))
	zs.spare(make([]byte, 0, 200*k)) // larger than 60 KiB, but over 1 MiB in its place: dropped
	require.ElementsMatch(t, []int{60 * k, 256 * k, 700 * k}, caps(zs))

	one := &zstdState{}
	one.spare(make([]byte, 0, 2*spareMaxBytes))
	require.Equal(t, []int{2 * spareMaxBytes}, caps(one), "one is kept whatever its size")
}
