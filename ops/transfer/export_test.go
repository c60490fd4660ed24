package transfer_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/transfer"
)

// An export of a fork up to any seq is a standalone raw session: no
// parent, its canonical lines those of the fork's logical log up to there,
// and every checkpoint in it verifies.
func TestExport(t *testing.T) {
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, "/src")
	ids := tree(t, st)
	h, err := st.Open(t.Context(), ids[1], handle.ReadOnly) // the zstd fork at 20 of the parent
	require.NoError(t, err)
	defer h.Close()
	full := strings.SplitAfter(canon(t, st, ids[1]), "\n")
	for _, to := range []int64{0, 15, 20, 21, h.Seq()} {
		var out bytes.Buffer
		n, err := transfer.Export(t.Context(), h, &out, to)
		require.NoError(t, err)
		require.Equal(t, to+1, n)

		require.NoError(t, afero.WriteFile(fsys, "/out/export.jsonl", out.Bytes(), 0o600))
		r, err := file.New(fsys, "/out").OpenPath(t.Context(), "/out/export.jsonl")
		require.NoError(t, err)
		require.Nil(t, r.Header().Parent)
		require.Equal(t, h.Header().Labels, r.Header().Labels)
		require.Equal(t, h.ID(), r.ID())
		var got strings.Builder
		for e, err := range r.Read(t.Context(), 0, handle.End) {
			require.NoError(t, err)
			got.Write(append(eventlog.AppendCanon(nil, e), '\n'))
		}
		require.Equal(t, strings.Join(full[:to+1], ""), got.String())
		res, err := checkpoint.Verify(t.Context(), r)
		require.NoError(t, err)
		require.Equal(t, map[bool]int{true: 1, false: 0}[to >= 16], res.Checkpoints, "the parent's checkpoint at seq 16")
		require.NoError(t, r.Close())
	}
	var out bytes.Buffer
	_, err = transfer.Export(t.Context(), h, &out, h.Seq()+1)
	require.ErrorContains(t, err, "the log ended at seq")
}
