package formats_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/importer/formats"
)

func TestRegistryNamesEveryBuiltIn(t *testing.T) {
	r := formats.Registry()
	require.Equal(t, []string{"claude", "codex", "dsh", "swe-agent"}, r.Names())
	for _, imp := range formats.All() {
		got, err := r.Lookup(imp.Name())
		require.NoError(t, err)
		require.Equal(t, imp.Name(), got.Name())
	}
}
