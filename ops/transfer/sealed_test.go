package transfer_test

import (
	"testing"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
	"github.com/sessionlog/sessionlog/ops/transfer"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// A copy of a sealed session and its fork is sealed as they are: the
// same recipients read it, and nothing of it is in clear in the store
// copied to, which holds no recipient of its own. Copied again, each is
// unchanged (the copy is idempotent on sealed sessions too).
func TestCopySealed(t *testing.T) {
	ctx := t.Context()
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	fsys := afero.NewMemMapFs()
	src := file.New(fsys, "/src", handle.WithRecipients(id.Recipient()), handle.WithIdentities(id))
	root := session(t, src, 6)
	f, err := src.Fork(ctx, root, 3)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	dst := file.New(fsys, "/dst", handle.WithIdentities(id))
	for _, err := range transfer.Copy(ctx, src, dst) {
		require.NoError(t, err)
	}
	for _, s := range []string{root, f.ID()} {
		require.Equal(t, canon(t, src, s), canon(t, dst, s))
		info, err := dst.Stat(ctx, s)
		require.NoError(t, err)
		require.True(t, info.Sealed, s)
		b, err := afero.ReadFile(fsys, info.Path)
		require.NoError(t, err)
		require.NotContains(t, string(b), `"text":"m1"`)
	}
	n := 0
	for r, err := range transfer.Copy(ctx, src, dst) {
		require.NoError(t, err)
		require.Equal(t, transfer.Unchanged, r.Status, r.ID)
		n++
	}
	require.Equal(t, 2, n)
	_, err = file.New(fsys, "/dst").Open(ctx, root, handle.ReadOnly)
	require.ErrorIs(t, err, seal.ErrNoKey, "the copy needs the identity")
}

// Folder → JetStream → folder keeps a sealed session and its fork sealed
// with the same key records (Config.SealAs): the stream's copy reads only with
// the identity, the copy back reads as the source, and a copy run again
// writes nothing.
func TestCopySealedJetStream(t *testing.T) {
	ctx := t.Context()
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	fsys := afero.NewMemMapFs()
	src := file.New(fsys, "/src", handle.WithRecipients(id.Recipient()), handle.WithIdentities(id))
	root := session(t, src, 6)
	f, err := src.Fork(ctx, root, 3)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	nc := natstest.Connect(t, natstest.Run(t))
	js, err := jetstream.New(ctx, nc, jetstream.WithPrefix("sealed"), jetstream.With(handle.WithIdentities(id)), jetstream.WithSyncAlways())
	require.NoError(t, err)
	for _, err := range transfer.Copy(ctx, src, js, transfer.WithEncoding(handle.EncodingRaw)) {
		require.NoError(t, err)
	}
	for r, err := range transfer.Copy(ctx, src, js, transfer.WithEncoding(handle.EncodingRaw)) {
		require.NoError(t, err)
		require.Equal(t, transfer.Unchanged, r.Status, r.ID)
	}
	back := file.New(fsys, "/back", handle.WithIdentities(id))
	for _, err := range transfer.Copy(ctx, js, back) {
		require.NoError(t, err)
	}
	for _, s := range []string{root, f.ID()} {
		require.Equal(t, canon(t, src, s), canon(t, js, s))
		require.Equal(t, canon(t, src, s), canon(t, back, s))
		for _, st := range []handle.Store{js, back} {
			info, err := st.Stat(ctx, s)
			require.NoError(t, err)
			require.True(t, info.Sealed, s)
		}
		sl, err := src.SealingOf(ctx, s)
		require.NoError(t, err)
		jsl, err := js.SealingOf(ctx, s)
		require.NoError(t, err)
		require.Equal(t, sl.Envelopes[0].Age, jsl.Envelopes[0].Age, "the same key records")
	}
	bare, err := jetstream.New(ctx, nc, jetstream.WithPrefix("sealed"), jetstream.WithSyncAlways())
	require.NoError(t, err)
	_, err = bare.Open(ctx, root, handle.ReadOnly)
	require.ErrorIs(t, err, seal.ErrNoKey, "the stream's copy needs the identity")
}
