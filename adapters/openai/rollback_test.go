package slopenai_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"filippo.io/age"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	slopenai "github.com/sessionlog/sessionlog/adapters/openai"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/provider"
)

// TestResumeAfterRollback: after a rollback to the seq of the first tool
// output, the head of the live branch rebuilds as that seq did, and the
// loop goes on from it: the write tool, not started there, runs, and the
// requests are the uncrashed run's from the second on.
func TestResumeAfterRollback(t *testing.T) {
	ctx := context.Background()
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	keys := provider.NewKeys(id)
	newAgent := func(ps *provider.Session, url string) *agent {
		return &agent{client: openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), slopenai.Record(ps)), ps: ps, turns: turns}
	}
	fake := &fakeResponses{key: []byte("k"), script: toolScript}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	h, err := file.New(afero.NewMemMapFs(), "/store").Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
	require.NoError(t, err)
	require.NoError(t, newAgent(ps, srv.URL).run(ctx, t, slopenai.Next{Empty: true}))
	want := fake.sent()

	to := int64(-1)
	for e, err := range h.Read(ctx, h.Header().FirstSeq(), h.Seq()) {
		require.NoError(t, err)
		if e.Type == provider.TypeInput && to < 0 {
			to = e.Seq
		}
	}
	at, err := provider.At(ctx, h, to, keys)
	require.NoError(t, err)
	atNext, err := slopenai.Responses(at)
	require.NoError(t, err)
	require.Len(t, atNext.Pending, 1, "write_file has no output at the first output's seq")

	data, err := json.Marshal(eventlog.RollbackData{To: to, Reason: "retry the write"})
	require.NoError(t, err)
	_, err = h.Append(ctx, eventlog.Event{Type: eventlog.TypeRollback, Data: data})
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))

	conv, err := ps.Conversation(ctx)
	require.NoError(t, err)
	n, err := slopenai.Responses(conv)
	require.NoError(t, err)
	require.Equal(t, canon(t, atNext.Params), canon(t, n.Params))
	require.Equal(t, atNext.Pending, n.Pending)
	require.False(t, n.Pending[0].Started)

	fake2 := &fakeResponses{key: []byte("k"), script: toolScript}
	srv2 := httptest.NewServer(fake2)
	defer srv2.Close()
	require.NoError(t, newAgent(ps, srv2.URL).run(ctx, t, n))
	require.Equal(t, want[1:], fake2.sent())
}
