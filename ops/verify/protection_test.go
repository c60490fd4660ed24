package verify_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/verify"
	"github.com/sessionlog/sessionlog/provider"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// Verify says what protects a session: strings redacted at write, and
// those whose original is sealed to the agent's key (provider records).
func TestProtection(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	h, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, eventlog.Event{Type: "tool/result", Time: 1, Data: json.RawMessage(`{"id":"c","output":"AKIAIOSFODNN7EXAMPLE"}`)})
	require.NoError(t, err)
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	ps, err := provider.Open(ctx, h, provider.WithKeys(provider.NewKeys(id)))
	require.NoError(t, err)
	_, err = ps.Request(ctx, provider.Request{Provider: "anthropic", API: "messages", Body: []byte(`{"model":"m","system":"key AKIAIOSFODNN7EXAMPLE","messages":[{"role":"user","content":"AKIAIOSFODNN7EXAMPLE"}]}`)})
	require.NoError(t, err)
	require.NoError(t, h.Close())

	want := &redact.Protection{Redacted: 4, Escrowed: 2} // the tool output, the derived user message; the system prompt and the item, sealed
	rep := verify.Session(ctx, st, h.ID())
	require.True(t, rep.OK, rep.Error)
	require.Equal(t, want, rep.Protection)
	rep = verify.File(ctx, afero.NewOsFs(), filepath.Join(dir, h.ID()+".jsonl"))
	require.True(t, rep.OK, rep.Error)
	require.Equal(t, want, rep.Protection)
	require.Equal(t, "4 strings redacted, 2 of them sealed to the agent's key", rep.Protection.String())
}
