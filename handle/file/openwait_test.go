package file_test

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

func TestOpenWhenFree(t *testing.T) {
	tests := []struct {
		name    string
		held    bool // another writer holds the lock throughout
		release bool // the other writer closes once OpenWhenFree waits
		wait    time.Duration
		cancel  bool
		wantErr error
	}{
		{name: "free", wait: 0},
		{name: "held, no wait", held: true, wait: 0, wantErr: handle.ErrLocked},
		{name: "held past the wait", held: true, wait: 300 * time.Millisecond, wantErr: handle.ErrLocked},
		{name: "released while waiting", held: true, release: true, wait: time.Hour},
		{name: "cancelled while waiting", held: true, cancel: true, wait: time.Hour, wantErr: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			st := file.New(afero.NewMemMapFs(), "/s")
			h, err := st.Create(ctx)
			require.NoError(t, err)
			id := h.ID()
			if !tc.held {
				require.NoError(t, h.Close())
			} else {
				defer h.Close()
			}
			waited := 0
			w, err := st.OpenWhenFree(ctx, id, tc.wait, func() {
				waited++
				switch {
				case tc.release:
					require.NoError(t, h.Close())
				case tc.cancel:
					cancel()
				}
			})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				require.Nil(t, w)
				require.Equal(t, tc.wait > 0, waited == 1, "waiting is called once, only when it waits")
				return
			}
			require.NoError(t, err)
			defer w.Close()
			require.Equal(t, id, w.ID())
			require.Equal(t, tc.held, waited == 1)
			_, err = w.Append(ctx, crashEvent(0))
			require.NoError(t, err, "the handle writes")
		})
	}
}
