package inspect_test

import (
	"errors"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/inspect"
)

// Forest: forks under their parents, depth-first; a session whose tail
// does not read is shown with its error and still holds its forks; a
// pair whose parents loop is under no root and reported as
// ErrParentLoop; a header that does not read is reported.
func TestForest(t *testing.T) {
	st := file.New(afero.NewMemMapFs(), "/s")
	root := session(t, st, messages(3), handle.WithCreatedAt(1000))
	f, err := st.Fork(t.Context(), root, 1)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	damaged := session(t, st, messages(2), handle.WithCreatedAt(2000))
	g, err := st.Fork(t.Context(), damaged, 0)
	require.NoError(t, err)
	require.NoError(t, g.Close())
	path, err := st.Path(damaged)
	require.NoError(t, err)
	data, err := afero.ReadFile(st.Fs(), path)
	require.NoError(t, err)
	require.NoError(t, afero.WriteFile(st.Fs(), path, append(data[:len(data)-1], "garbage\n"...), 0o600))

	const a, b, bad = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", "01JDX3N0Q3Z8Y6W2D1V5K7M9PB", "01JDX3N0Q3Z8Y6W2D1V5K7M9PC"
	header := func(id, parent string) []byte {
		return []byte(`{"format":"sessionlog","version":1,"id":"` + id + `","createdAt":1,"parent":{"id":"` + parent + `","seq":0,"mode":"fork"}}` + "\n")
	}
	require.NoError(t, afero.WriteFile(st.Fs(), "/s/"+a+".jsonl", header(a, b), 0o600))
	require.NoError(t, afero.WriteFile(st.Fs(), "/s/"+b+".jsonl", header(b, a), 0o600))
	require.NoError(t, afero.WriteFile(st.Fs(), "/s/"+bad+".jsonl", []byte("{not a header}\n"), 0o600))

	rows, broken, err := inspect.Forest(t.Context(), st)
	require.NoError(t, err)
	type row struct {
		id     string
		depth  int
		events int64
		failed bool
	}
	var got []row
	for _, r := range rows {
		require.Equal(t, r.Node.Header.ID, r.Info.ID)
		got = append(got, row{r.Info.ID, r.Depth, r.Info.Events, r.Err != nil})
	}
	require.Equal(t, []row{{root, 0, 3, false}, {f.ID(), 1, 2, false}, {damaged, 0, 0, true}, {g.ID(), 1, 1, false}}, got)
	require.ErrorIs(t, rows[2].Err, eventlog.ErrCorrupt)
	require.Equal(t, path, rows[2].Info.Path, "what the header tells")

	require.Len(t, broken, 4)
	require.ErrorIs(t, broken[0], inspect.ErrParentLoop)
	require.ErrorContains(t, broken[0], a)
	require.ErrorIs(t, broken[1], inspect.ErrParentLoop)
	require.ErrorContains(t, broken[1], b)
	require.ErrorContains(t, broken[2], bad)
	require.False(t, errors.Is(broken[2], inspect.ErrParentLoop))
	require.ErrorIs(t, broken[3], eventlog.ErrCorrupt)
	require.ErrorContains(t, broken[3], damaged)
}
