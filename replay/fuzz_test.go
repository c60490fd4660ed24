package replay_test

import (
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// fuzzScript is the log of FuzzStoredState: messages (which the
// transcript keeps), checkpoints where states are stored, and rollbacks to
// a checkpoint, to a message, past a stored state and into an abandoned
// branch.
var fuzzScript = strings.Fields("m m c m e m c m m r3 m c m r8 m c e m m r12 c m r1 m c m")

// fuzzSets are the sets of projections FuzzStoredState replays: seqs and
// the transcript (their stored states are fuzzed as files), and the
// transcript alone (its stored states are fuzzed as data too).
var fuzzSets = []func() []projection.Projection{
	func() []projection.Projection { return []projection.Projection{&seqs{}, projection.NewTranscript()} },
	func() []projection.Projection { return []projection.Projection{projection.NewTranscript()} },
}

const fuzzDir = "/s"

// marshalAll returns the marshalled states of ps.
func marshalAll(t testing.TB, ps []projection.Projection) []string {
	t.Helper()
	out := make([]string, len(ps))
	for i, p := range ps {
		b, err := p.MarshalState()
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

// replayStates replays src up to upTo into a fresh set and returns its
// states.
func replayStates(t testing.TB, src replay.Source, set func() []projection.Projection, upTo int64, opts ...replay.Option) []string {
	t.Helper()
	ps := set()
	res, err := replay.Replay(t.Context(), src, ps, append(opts, replay.UpTo(upTo))...)
	require.NoError(t, err)
	require.Equal(t, upTo, res.Seq)
	return marshalAll(t, ps)
}

// fuzzSession writes log into a new store over a memory file system and
// returns a read-only handle on it.
func fuzzSession(t testing.TB, log *memLog) (*file.Store, handle.Handle) {
	t.Helper()
	st := file.New(afero.NewMemMapFs(), fuzzDir)
	w, err := st.Create(t.Context(), handle.WithID(log.ID()))
	require.NoError(t, err)
	_, err = w.Append(t.Context(), log.evs...)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	h, err := st.Open(t.Context(), log.ID(), handle.ReadOnly)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return st, h
}

// derivedKeys returns the keys of the session's derived files whose key
// starts with prefix.
func derivedKeys(t testing.TB, st *file.Store, id, prefix string) []string {
	t.Helper()
	paths, err := afero.Glob(st.Fs(), filepath.Join(fuzzDir, ".cache", id+"."+prefix+"*"))
	require.NoError(t, err)
	keys := make([]string, len(paths))
	for i, p := range paths {
		keys[i] = strings.TrimPrefix(filepath.Base(p), id+".")
	}
	return keys
}

// seedSeqs are the seqs FuzzStoredState's seeds replay up to, as its
// fuzzed byte: nothing, the first event, the middle and the last event.
func seedSeqs(last int64) []uint8 {
	return []uint8{0, 1, uint8(last/2 + 1), uint8(last + 1)}
}

// Whatever the stored states and their index hold, replay with the cache
// gives, at every seq, the states replay without it gives. As files (the
// bytes of the store's cache files) any damage is ignored. As data (bytes
// the store keeps for replay) a stored state whose session, seq, log
// digest and projections match a checkpoint of the log is trusted, as
// documented, so that level runs the transcript alone, which checks its
// own state (a prefix hash): the fuzzer cannot make up one it accepts.
func FuzzStoredState(f *testing.F) {
	log := build(f, fuzzScript...)
	id := log.ID()
	// want[i][k+1] is the states of set i up to k, without a cache.
	want := make([][][]string, len(fuzzSets))
	for i, set := range fuzzSets {
		for k := int64(-1); k <= log.Seq(); k++ {
			want[i] = append(want[i], replayStates(f, log, set, k))
		}
	}
	for k := int64(-1); k <= log.Seq(); k++ {
		var applied []int64
		if s := want[0][k+1][0]; s != "null" {
			require.NoError(f, json.Unmarshal([]byte(s), &applied))
		}
		require.Equal(f, naive(log.evs, k), applied, "seqs at %d", k)
	}

	// The session, and the files a replay with the cache stores: the seeds,
	// and what every run starts from.
	st, h := fuzzSession(f, log)
	cached := []replay.Option{replay.WithCache(st), replay.WithSnapshotEvery(1)}
	for i, set := range fuzzSets {
		require.Equal(f, want[i][h.Seq()+1], replayStates(f, h, set, h.Seq(), cached...))
	}
	cacheDir := filepath.Join(fuzzDir, ".cache")
	stored := map[string][]byte{}
	require.NoError(f, afero.Walk(st.Fs(), cacheDir, func(p string, fi fs.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			stored[p], err = afero.ReadFile(st.Fs(), p)
		}
		return err
	}))
	snaps, indexes := derivedKeys(f, st, id, "snap-"), derivedKeys(f, st, id, "snaps-")
	require.Len(f, indexes, len(fuzzSets))
	require.Len(f, snaps, 2*6, "a state at each checkpoint, for each set")
	data := func(key string) []byte {
		b, err := st.GetDerived(f.Context(), id, key)
		require.NoError(f, err)
		return b
	}
	for _, i := range []int{0, 5, 6, 11} { // the first and last state of each set
		key, idx := snaps[i], indexes[i/6]
		for _, upTo := range seedSeqs(h.Seq()) {
			f.Add(stored[filepath.Join(cacheDir, id+"."+key)], stored[filepath.Join(cacheDir, id+"."+idx)], upTo)
			f.Add(data(key), data(idx), upTo)
		}
	}
	for _, s := range [][2]string{
		{"", ""}, {"null", "null"}, {"{}", "[]"}, {`{"seq":-1}`, `[{"seq":-1}]`},
		{`{"session":"` + id + `","seq":2,"states":[null],"projections":["transcript/v1"]}`, `[{"seq":2},{"seq":1e3},{"seq":-9}]`},
		{`{"states":[{}],"projections":["transcript/v1"]}`, `[{"seq":9223372036854775807,"log":""}]`},
	} {
		for _, upTo := range seedSeqs(h.Seq()) {
			f.Add([]byte(s[0]), []byte(s[1]), upTo)
		}
	}

	// One seq per input (the fuzzer picks it): replaying up to every seq,
	// for each set, ran 200 inputs a minute.
	f.Fuzz(func(t *testing.T, state, index []byte, upTo uint8) {
		k := int64(upTo)%(h.Seq()+2) - 1
		// Back to the files the first replay stored.
		fsys := st.Fs()
		require.NoError(t, fsys.RemoveAll(cacheDir))
		require.NoError(t, fsys.MkdirAll(cacheDir, 0o700))
		for p, b := range stored {
			require.NoError(t, afero.WriteFile(fsys, p, b, 0o600))
		}
		check := func(sets ...int) {
			t.Helper()
			for _, i := range sets {
				require.Equal(t, want[i][k+1], replayStates(t, h, fuzzSets[i], k, cached...), "set %d up to %d", i, k)
			}
		}
		// As files: every stored state, and each index when given.
		for _, key := range snaps {
			require.NoError(t, afero.WriteFile(fsys, filepath.Join(cacheDir, id+"."+key), state, 0o600))
		}
		for _, key := range indexes {
			if len(index) > 0 {
				require.NoError(t, afero.WriteFile(fsys, filepath.Join(cacheDir, id+"."+key), index, 0o600))
			}
		}
		check(0, 1)

		// As data, for the transcript alone.
		for _, key := range derivedKeys(t, st, id, "snap-transcript-") {
			require.NoError(t, st.PutDerived(t.Context(), id, key, state))
		}
		if len(index) > 0 {
			require.NoError(t, st.PutDerived(t.Context(), id, "snaps-transcript-v1", index))
		}
		check(1)
	})
}

// A stored state damaged on disk in a way that keeps it well formed (a
// seq added to the seqs state) is ignored: replay from the log gives the
// right state, and does not start from that snapshot.
func TestDamagedStoredStateFileIgnored(t *testing.T) {
	log := build(t, fuzzScript...)
	st, h := fuzzSession(t, log)
	set := fuzzSets[0]
	last := h.Seq()
	want := replayStates(t, log, set, last)
	require.Equal(t, want, replayStates(t, h, set, last, replay.WithCache(st), replay.WithSnapshotEvery(1)))
	const at = 24 // the last checkpoint
	require.Equal(t, "c", fuzzScript[at])
	path := filepath.Join(fuzzDir, ".cache", log.ID()+".snap-seqs-v1_transcript-v1-24")
	b, err := afero.ReadFile(st.Fs(), path)
	require.NoError(t, err)
	seqsState, err := json.Marshal(naive(log.evs, at))
	require.NoError(t, err)
	stored := `"states":[` + string(seqsState)
	require.Equal(t, 1, strings.Count(string(b), stored), "%s in %s", stored, b)
	damaged := strings.Replace(string(b), stored, `"states":[[99,`+string(seqsState[1:]), 1)
	require.NoError(t, afero.WriteFile(st.Fs(), path, []byte(damaged), 0o600))

	ps := set()
	res, err := replay.Replay(t.Context(), h, ps, replay.WithCache(st))
	require.NoError(t, err)
	require.Equal(t, want, marshalAll(t, ps))
	require.Less(t, res.FromSnapshot, int64(at), "not from the damaged state")
}
