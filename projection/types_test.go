package projection_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// Types holds §7's reserved types and §8's vocabulary, sorted, each once.
func TestTypes(t *testing.T) {
	types := projection.Types()
	require.True(t, slices.IsSorted(types))
	require.Len(t, types, 20)
	require.Equal(t, len(types), len(slices.Compact(slices.Clone(types))))
	for _, want := range []string{eventlog.TypeCheckpoint, eventlog.TypeRollback, "user/message", "tool/call", "turn/end", "context/compacted", "plan/set"} {
		require.Contains(t, types, want)
	}
	for _, ty := range types {
		require.NoError(t, eventlog.ValidateType(ty))
	}
}
