package zstdframe_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/stretchr/testify/require"
)

// MaxContent is defined here with a copy of eventlog.MaxRowSize, which this
// package cannot import: the two must agree.
func TestMaxContentIsTwoRowsAndATarget(t *testing.T) {
	require.EqualValues(t, 2*eventlog.MaxRowSize+zstdframe.Target, zstdframe.MaxContent)
}

// A tail frame parses back to what was appended, only at its own offset,
// and not once any byte of its identity is damaged.
func TestTailRoundTrip(t *testing.T) {
	const at, lastOff, lastLen, next = 1000, 600, 400, 42
	tail := zstdframe.AppendTail(nil, at, lastOff, lastLen, next)
	require.Len(t, tail, zstdframe.TailSize)
	require.Equal(t, uint32(zstdframe.TailMagic), binary.LittleEndian.Uint32(tail))
	require.True(t, bytes.HasPrefix(tail, zstdframe.TailMagicBytes))

	off, n, ok := zstdframe.ParseTail(tail, at)
	require.True(t, ok)
	require.Equal(t, [2]int64{lastOff, lastLen}, [2]int64{off, n})
	require.Equal(t, uint64(next), binary.LittleEndian.Uint64(tail[40:]))

	damage := func(i int) []byte { b := bytes.Clone(tail); b[i] ^= 1; return b }
	tests := []struct {
		name string
		b    []byte
		at   int64
	}{
		{"another offset", tail, at + 1},
		{"short", tail[:zstdframe.TailSize-1], at},
		{"magic", damage(0), at},
		{"size field", damage(4), at},
		{"identity", damage(8), at},
		{"own offset", damage(16), at},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, ok := zstdframe.ParseTail(tt.b, tt.at)
			require.False(t, ok)
		})
	}
}

// Cut keeps a frame's content within Target, at a row boundary, but for
// a single row larger than Target, which is not split.
func TestCut(t *testing.T) {
	row := func(n int) string { return strings.Repeat("x", n-1) + "\n" }
	tests := []struct {
		name string
		rows string
		want int
	}{
		{"empty", "", 0},
		{"all of them under the target", row(10) + row(20), 30},
		{"exactly the target", row(zstdframe.Target), zstdframe.Target},
		{"the rows that fit", row(zstdframe.Target-5) + row(10), zstdframe.Target - 5},
		{"a first row over the target", row(zstdframe.Target+1) + row(3), zstdframe.Target + 1},
		{"no newline at all", strings.Repeat("x", zstdframe.Target+1), zstdframe.Target + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, zstdframe.Cut([]byte(tt.rows)))
		})
	}
}

// ExtentOf tells a skippable frame by its size field, asks for more bytes
// when they are short, and refuses bytes that start no frame.
func TestExtentOf(t *testing.T) {
	skip := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, zstdframe.SkippableMagic|3), 5)
	skip = append(skip, "hello"...)
	n, skippable, need, err := zstdframe.ExtentOf(skip)
	require.NoError(t, err)
	require.Equal(t, []any{13, true, 0}, []any{n, skippable, need})

	_, _, need, err = zstdframe.ExtentOf(skip[:6])
	require.NoError(t, err)
	require.Equal(t, 8, need)

	_, _, _, err = zstdframe.ExtentOf([]byte("not a frame"))
	require.Error(t, err)

	frames, end := zstdframe.Frames(bytes.NewReader(skip), int64(len(skip)))
	require.Equal(t, []zstdframe.Frame{{Offset: 0, Len: 13, Skippable: true}}, frames)
	require.EqualValues(t, 13, end)
	require.True(t, zstdframe.MagicAt(skip))
	require.True(t, zstdframe.MagicAt(zstdframe.MagicBytes))
}
