package projection_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/projection"
)

// Every name gives a fresh projection of that name; an unknown one says
// which there are.
func TestByName(t *testing.T) {
	require.Equal(t, []string{"transcript", "agent", "conversation"}, projection.Names())
	for _, name := range projection.Names() {
		p, err := projection.ByName(name)
		require.NoError(t, err)
		require.Equal(t, name, p.Name())
		q, err := projection.ByName(name)
		require.NoError(t, err)
		require.NotSame(t, p, q, "a fresh projection each time")
	}
	_, err := projection.ByName("agnet")
	require.ErrorIs(t, err, projection.ErrUnknown)
	require.EqualError(t, err, `projection: unknown projection "agnet": want transcript, agent, conversation`)
}

// verify checks the states of agent/v1 and transcript/v1 (docs/cli.md,
// verify), each from a fresh projection.
func TestVerifiable(t *testing.T) {
	var ids []string
	for _, p := range projection.Verifiable() {
		ids = append(ids, projection.ID(p))
	}
	require.ElementsMatch(t, []string{"agent/v1", "transcript/v1"}, ids)
	require.NotSame(t, projection.Verifiable()[0], projection.Verifiable()[0])
}
