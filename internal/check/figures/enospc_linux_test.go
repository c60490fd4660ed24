package figures_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// mountTmpfs mounts a tmpfs of size bytes on a new folder and returns it,
// or skips t with the reason it cannot (not root, no mount).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("ENOSPC on a real file system: needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("ENOSPC on a real file system: mount -t tmpfs failed: %v %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		out, err := exec.Command("umount", dir).CombinedOutput()
		require.NoError(t, err, "umount %s: %s", dir, out)
	})
	return dir
}

// resize changes the size of the tmpfs mounted on dir.
func resize(t *testing.T, dir string, size int) {
	t.Helper()
	out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%d", size), dir).CombinedOutput()
	require.NoError(t, err, "remount %s: %s", dir, out)
}

// TestENOSPCOnTmpfs writes sessions on a tmpfs of 256 KiB (raw and zstd,
// the zstd events made of random-looking text so frames do not shrink
// them to nothing) until a flush fails for want of space, then checks: the
// failed flush is an ENOSPC error, every event acknowledged before it is
// there after a reopen, and once space is back (the tmpfs grown) appends
// go on from the last acknowledged seq. Under SESSIONLOG_SWEEPS=long it
// runs 20 rounds per encoding, each filling the disk again.
func TestENOSPCOnTmpfs(t *testing.T) {
	const small, big = 256 << 10, 4 << 20
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			rounds := sweep.Size(2, 2, 20)
			lost, unopenable, failures := 0, 0, 0
			for round := range rounds {
				dir := mountTmpfs(t, small)
				ctx := t.Context()
				st := file.New(afero.NewOsFs(), dir)
				h, err := st.Create(ctx, handle.WithEncoding(enc))
				require.NoError(t, err)
				id := h.ID()
				acked := int64(-1)
				var flushErr error
				for i := 0; flushErr == nil; i++ {
					require.Less(t, i, 10000, "the disk never filled")
					// 2 KiB of data each, twice per flush.
					ev := eventlog.Event{Type: "tool/result", Time: 1764450000000 + int64(i), Data: noisy(round, i)}
					last, err := h.Append(ctx, ev, ev)
					if err != nil {
						flushErr = err
						break
					}
					if flushErr = h.Flush(ctx); flushErr == nil {
						acked = last
					}
				}
				require.True(t, errors.Is(flushErr, syscall.ENOSPC), "the flush fails with ENOSPC: %v", flushErr)
				failures++
				h.Close()

				resize(t, dir, big)
				st = file.New(afero.NewOsFs(), dir)
				r, err := st.Open(ctx, id, handle.ReadWrite)
				if err != nil {
					unopenable++
				}
				require.NoError(t, err, "the session reopens")
				n := int64(0)
				for e, err := range r.Read(ctx, 0, handle.End) {
					require.NoError(t, err)
					require.Equal(t, n, e.Seq)
					n++
				}
				lost += int(max(0, acked+1-n))
				require.GreaterOrEqual(t, n, acked+1, "every acknowledged event is there")
				last, err := r.Append(ctx, eventlog.Event{Type: "user/message", Time: 1, Data: json.RawMessage(`{"text":"after"}`)})
				require.NoError(t, err)
				require.NoError(t, r.Flush(ctx), "appends go on once space is back")
				require.Equal(t, n, last)
				require.NoError(t, r.Close())
			}
			figure(t, "enospc", "%s | tmpfs of %d KiB, %d rounds | ENOSPC failures %d | acknowledged events lost %d | sessions unopenable %d",
				enc, small>>10, rounds, failures, lost, unopenable)
		})
	}
}

// noisy returns event data that zstd cannot shrink much: text from a
// simple generator seeded by round and i.
func noisy(round, i int) json.RawMessage {
	var b strings.Builder
	x := uint64(round)<<32 | uint64(i) | 1
	for range 2048 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[x%36])
	}
	return json.RawMessage(`{"text":"` + b.String() + `"}`)
}
