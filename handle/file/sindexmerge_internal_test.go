package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// BenchmarkWriteMerged measures the merge of a fold into a new snapshot
// alone (writeMerged), on the OS file system: a snapshot of n sessions as
// BenchmarkManySessions (bench/) makes them — two labels, 5 events —
// written once, merged with max(1024, n/256) changed sessions (a tenth
// gone, the rest new). 100k sessions; 1M too with SESSIONLOG_BENCH_LARGE
// (the snapshot alone is ~730 MB).
func BenchmarkWriteMerged(b *testing.B) {
	sizes := []int{100_000}
	if on, _ := strconv.ParseBool(os.Getenv("SESSIONLOG_BENCH_LARGE")); on {
		sizes = append(sizes, 1_000_000)
	}
	entry := func(i int) *sessEntry {
		id := fmt.Sprintf("01M91AKRMY%016d", i)
		return &sessEntry{ID: id, Encoding: "raw", Events: 5, LastSeq: 4, LastType: "assistant/message",
			LastTime: 1764450000000 + int64(i), Size: 812, Header: &eventlog.Header{
				Format: "sessionlog", Version: 1, ID: id, CreatedAt: 1764450000000 + int64(i),
				Labels: map[string]string{"task": strconv.Itoa(i), "agent": strconv.Itoa(i % 100)}}}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			fsys := afero.NewOsFs()
			path := filepath.Join(b.TempDir(), sindexName)
			entries := make(map[string]*sessEntry, n)
			acked := make(map[string]int64, n)
			for i := range n {
				e := entry(2 * i)
				entries[e.ID], acked[e.ID] = e, 5
			}
			require.NoError(b, writeSnapshot(b.Context(), fsys, path, entries, acked, 1, ""))
			clear(entries)
			clear(acked)
			old, err := openSnapshot(fsys, path)
			require.NoError(b, err)
			defer old.close()
			fi, err := os.Stat(path)
			require.NoError(b, err)
			changes := map[string]*sessEntry{}
			for i := range max(1024, n/256) {
				if i%10 == 0 {
					changes[entry(2*i*(n/1024)).ID] = nil
				} else {
					e := entry(2*i*(n/1024) + 1)
					changes[e.ID], acked[e.ID] = e, 6
				}
			}
			out := path + ".merged"
			b.SetBytes(fi.Size())
			for b.Loop() {
				count, err := writeMerged(b.Context(), fsys, out, old, changes, acked, 2)
				require.NoError(b, err)
				require.Greater(b, count, int64(n-len(changes)))
			}
		})
	}
}
