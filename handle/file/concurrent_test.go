package file_test

import (
	"context"
	"sync"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// Readers and the writer of one handle run concurrently, on the memory
// file system too (whose files share one offset for positional I/O).
func TestConcurrentReadsDuringAppends(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   afero.Fs
		dir  string
	}{
		{"mem", afero.NewMemMapFs(), "/s"},
		{"os", afero.NewOsFs(), t.TempDir()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h, err := file.New(tc.fs, tc.dir, handle.WithEncoding(handle.EncodingZstd)).Create(ctx)
			require.NoError(t, err)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						next := int64(0)
						for e, err := range h.Read(ctx, 0, handle.End) {
							if err != nil {
								errs <- err
								return
							}
							if e.Seq != next {
								errs <- eventlog.ErrCorrupt
								return
							}
							next++
						}
					}
				}()
			}
			for range 300 {
				_, err := h.Append(ctx, eventlog.Event{Type: "x", Data: []byte(`{"v":"some data"}`)})
				require.NoError(t, err)
				require.NoError(t, h.Flush(ctx))
			}
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, h.Close())
		})
	}
}
