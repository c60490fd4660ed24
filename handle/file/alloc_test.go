package file_test

import (
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
)

// A one-event Append allocates only its data's copy: the queue reuses the
// previous flush's slice (docs/design.md, "Group commit"). The call through
// the Handle interface allocates its variadic slice too (the compiler cannot
// see that it does not escape): two in all.
func TestOneEventAppendAllocatesItsDataOnly(t *testing.T) {
	ctx := t.Context()
	st := file.New(afero.NewMemMapFs(), "/s")
	h, err := st.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	e := eventlog.Event{Type: "tool/call", Time: 1, Data: []byte(`{"id":"c1","name":"read_file"}`)}
	for range 1000 { // a flush of 1,000 leaves a queue that holds 1,000
		_, err := h.Append(ctx, e)
		require.NoError(t, err)
	}
	require.NoError(t, h.Flush(ctx))
	allocs := testing.AllocsPerRun(500, func() {
		if _, err := h.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	})
	require.LessOrEqual(t, allocs, 2.0)
}
