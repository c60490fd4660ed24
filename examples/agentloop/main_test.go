package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	loop "github.com/sessionlog/sessionlog/internal/app/agentloop"
	"github.com/sessionlog/sessionlog/provider/fixture"
)

// TestReplayFixture runs the loop on its recorded session and checks it
// makes the same events (times left out): a change in what the loop does
// fails here at the first event that differs. Record it again with
//
//	go test ./examples/agentloop -run TestReplayFixture -update
func TestReplayFixture(t *testing.T) {
	f := fixture.Open(t, filepath.Join("testdata", "session.jsonl"))
	work := t.TempDir()
	require.NoError(t, loop.Prepare(work))
	require.NoError(t, loop.Run(t.Context(), f.Handle(), loop.DefaultScript(), loop.Options{Workdir: work}))
	f.Check()
}
