package verify_test

import (
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
	"github.com/sessionlog/sessionlog/ops/verify"
)

// A sealed session verifies in full with its identity; without it, each
// way in (a session of a store, the store, a file by path) checks its
// framing and says it could not check more (kind key); a damaged framing
// is corruption, with or without the identity.
func TestSealedWithoutIdentity(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	st := file.New(fsys, dir, handle.WithRecipients(id.Recipient()), handle.WithIdentities(id))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, ev("user/message", `{"text":"a"}`), ev("assistant/message", `{"text":"b"}`))
	require.NoError(t, err)
	_, err = checkpoint.Create(ctx, h)
	require.NoError(t, err)
	require.NoError(t, h.Close())

	rep := verify.Session(ctx, st, h.ID())
	require.True(t, rep.OK, "%+v", rep.Error)
	require.EqualValues(t, 3, rep.Events)
	require.EqualValues(t, 1, rep.Checkpoints)

	none := file.New(fsys, dir)
	var store []verify.Report
	for r, err := range verify.Store(ctx, none) {
		require.NoError(t, err)
		store = append(store, r)
	}
	require.Len(t, store, 1)
	for name, r := range map[string]verify.Report{
		"session": verify.Session(ctx, none, h.ID()),
		"store":   store[0],
		"file":    verify.File(ctx, fsys, h.Path()),
	} {
		require.False(t, r.OK, name)
		require.Equal(t, verify.KindKey, r.Error.Kind, name)
		require.Contains(t, r.Error.Message, "no identity was given", name)
		require.Contains(t, r.Error.Message, "only the framing was checked, and it is sound (4 sealed records, 1 key records)", name)
		require.Equal(t, h.Path(), r.Path, name)
	}

	// A line in the middle that is no record: corruption, either way.
	b, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines[3] = "not a record\n"
	write(t, fsys, h.Path(), lines...)
	for _, s := range []*file.Store{none, st} {
		r := verify.Session(ctx, s, h.ID())
		require.Equal(t, verify.KindCorrupt, r.Error.Kind, "%+v", r.Error)
	}
	require.Equal(t, verify.KindCorrupt, verify.File(ctx, fsys, h.Path()).Error.Kind)
}

// On JetStream too, a sealed session verified without its key has its
// framing checked (handle.SealedExporter's Framing), not only the key's
// absence reported.
func TestSealedWithoutIdentityJetStream(t *testing.T) {
	ctx := t.Context()
	nc := natstest.Connect(t, natstest.Run(t))
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	st, err := jetstream.New(ctx, nc, jetstream.WithPrefix("verify"), jetstream.With(handle.WithRecipients(id.Recipient()), handle.WithIdentities(id)))
	require.NoError(t, err)
	h, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, ev("user/message", `{"text":"a"}`), ev("assistant/message", `{"text":"b"}`))
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.True(t, verify.Session(ctx, st, h.ID()).OK)

	none, err := jetstream.New(ctx, nc, jetstream.WithPrefix("verify"))
	require.NoError(t, err)
	r := verify.Session(ctx, none, h.ID())
	require.False(t, r.OK)
	require.Equal(t, verify.KindKey, r.Error.Kind)
	require.Contains(t, r.Error.Message, "only the framing was checked, and it is sound (3 sealed records, 1 key records)")
	require.Equal(t, h.Path(), r.Path)
}
