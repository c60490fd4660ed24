package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNearest(t *testing.T) {
	require.Equal(t, 0, editDistance("stat", "stat"))
	require.Equal(t, 1, editDistance("jsno", "json"), "a swap is one edit")
	require.Equal(t, 1, editDistance("user/mesage", "user/message"))
	require.Equal(t, 3, editDistance("", "abc"))
	for _, tc := range []struct{ w, want string }{
		{"user/mesage", "user/message"},
		{"jsno", "json"},
		{"tool/cal", "tool/call"},
		{"nothing/like/it", ""},
		{"ab", ""}, // two letters: no change is small enough
	} {
		require.Equal(t, tc.want, nearest(tc.w, []string{"user/message", "json", "tool/call", "tool/result", "ax"}), tc.w)
	}
	require.Equal(t, "a or b", orList([]string{"a", "b"}))
	require.Equal(t, "a, b or c", orList([]string{"a", "b", "c"}))
}
