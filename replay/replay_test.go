package replay_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// seqs is a test projection whose state is the seqs of the events it was
// given, in order: any mistake in rollback handling shows in it.
type seqs struct{ applied []int64 }

func (s *seqs) got() []int64                  { return s.applied }
func (s *seqs) Name() string                  { return "seqs" }
func (s *seqs) Version() int                  { return 1 }
func (s *seqs) Apply(e eventlog.Event)        { s.applied = append(s.applied, e.Seq) }
func (s *seqs) Reset()                        { s.applied = nil }
func (s *seqs) MarshalState() ([]byte, error) { return json.Marshal(s.applied) }
func (s *seqs) UnmarshalState(b []byte) error {
	s.applied = nil
	return json.Unmarshal(b, &s.applied)
}

// snapSeqs is seqs as a projection.Snapshotter: the engine keeps copies of
// it in memory instead of marshalled states. Its snapshots share the
// applied array with the live state (clipped), as the transcript's do, so
// an engine that restored a snapshot without Restore's copy would show.
type snapSeqs struct{ seqs }

func (s *snapSeqs) Snapshot() (any, int) { return slices.Clip(s.applied), 8 * len(s.applied) }

func (s *snapSeqs) Restore(snap any) error {
	s.applied = slices.Clip(snap.([]int64))
	return nil
}

// memLog is a Source over events in memory that counts what it reads.
type memLog struct {
	evs  []eventlog.Event
	read int
}

func (m *memLog) ID() string { return "01JDX3N0Q3Z8Y6W2D1V5K7M9PA" }
func (m *memLog) Seq() int64 { return int64(len(m.evs)) - 1 }
func (m *memLog) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		for i := max(from, 0); i <= to && i < int64(len(m.evs)); i++ {
			m.read++
			if !yield(m.evs[i], nil) {
				return
			}
		}
	}
}

// memCache is a Cache in memory.
type memCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *memCache) GetDerived(_ context.Context, id, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[id+"/"+key]
	if !ok {
		return nil, errors.New("not found")
	}
	return b, nil
}

func (c *memCache) DeleteDerived(_ context.Context, id, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id+"/"+key)
	return nil
}

func (c *memCache) PutDerived(_ context.Context, id, key string, b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[id+"/"+key] = append([]byte(nil), b...)
	return nil
}

// build makes a log from a compact script: "e" an event, "m" a user
// message (text: its seq), "c" a checkpoint (with the right log digest),
// "r5" a rollback to 5.
func build(t testing.TB, script ...string) *memLog {
	t.Helper()
	m := &memLog{}
	d := eventlog.NewDigest()
	for i, s := range script {
		e := eventlog.Event{Seq: int64(i), Type: "x", Time: int64(i)}
		switch {
		case s == "m":
			e.Type = "user/message"
			e.Data = json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i))
		case s == "c":
			e.Type = eventlog.TypeCheckpoint
			e.Data = json.RawMessage(fmt.Sprintf(`{"log":%q,"label":"l%d"}`, d.String(), i))
		case s[0] == 'r':
			var to int
			fmt.Sscanf(s[1:], "%d", &to)
			e.Type = eventlog.TypeRollback
			e.Data = json.RawMessage(fmt.Sprintf(`{"to":%d}`, to))
		}
		d.Add(e)
		m.evs = append(m.evs, e)
	}
	return m
}

// naive computes the state after event k by the definition, from zero.
func naive(evs []eventlog.Event, k int64) []int64 {
	memo := map[int64][]int64{}
	var at func(k int64) []int64
	at = func(k int64) []int64 {
		if k < 0 {
			return nil
		}
		if s, ok := memo[k]; ok {
			return s
		}
		var s []int64
		switch e := evs[k]; e.Type {
		case eventlog.TypeRollback:
			rb, _ := eventlog.ParseRollback(e.Data)
			s = at(rb.To)
		case eventlog.TypeCheckpoint:
			s = at(k - 1)
		default:
			s = append(append([]int64(nil), at(k-1)...), k)
		}
		memo[k] = s
		return s
	}
	return at(k)
}

func replayTo(t *testing.T, src replay.Source, upTo int64, opts ...replay.Option) ([]int64, replay.Result) {
	t.Helper()
	return replayInto(t, &seqs{}, src, upTo, opts...)
}

// replaySnapTo is replayTo with a Snapshotter projection.
func replaySnapTo(t *testing.T, src replay.Source, upTo int64, opts ...replay.Option) ([]int64, replay.Result) {
	t.Helper()
	return replayInto(t, &snapSeqs{}, src, upTo, opts...)
}

func replayInto(t *testing.T, p interface {
	projection.Projection
	got() []int64
}, src replay.Source, upTo int64, opts ...replay.Option) ([]int64, replay.Result) {
	t.Helper()
	res, err := replay.Replay(context.Background(), src, []projection.Projection{p}, append(opts, replay.UpTo(upTo))...)
	require.NoError(t, err)
	return p.got(), res
}

func TestRollbackSemantics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []string
		want   []int64
	}{
		{"no rollback", []string{"e", "e", "e"}, []int64{0, 1, 2}},
		{"to a checkpoint (state after C equals after C-1)", []string{"e", "e", "c", "e", "e", "r2", "e"}, []int64{0, 1, 6}},
		{"to any seq", []string{"e", "e", "e", "e", "r1", "e"}, []int64{0, 1, 5}},
		{"to seq 0", []string{"e", "e", "e", "r0", "e"}, []int64{0, 4}},
		{"nested: a rollback undone by another", []string{"e", "e", "e", "r0", "e", "r3", "e"}, []int64{0, 6}},
		{"back past an earlier rollback", []string{"e", "e", "e", "r0", "e", "e", "r4", "e"}, []int64{0, 4, 7}},
		{"into an abandoned branch", []string{"e", "e", "e", "e", "r0", "e", "r2", "e"}, []int64{0, 1, 2, 7}},
		{"to the rollback before it", []string{"e", "e", "r0", "r2", "e"}, []int64{0, 4}},
		{"to a checkpoint in an abandoned branch", []string{"e", "c", "e", "r0", "e", "r1", "e"}, []int64{0, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := build(t, tc.script...)
			for _, every := range []int{1, 2, 1000} {
				got, res := replayTo(t, src, src.Seq(), replay.WithSnapshotEvery(every))
				require.Equal(t, tc.want, got, "snapshot every %d", every)
				require.Equal(t, src.Seq(), res.Seq)
				require.Equal(t, naive(src.evs, src.Seq()), got)
			}
		})
	}
}

// For random logs with random rollbacks and checkpoints, replay with kept
// states (in memory, thinned, and on disk) equals the naive definition at
// every seq. 5 rounds by default (each snapshot interval once), 40
// under SESSIONLOG_SWEEPS=full.
func TestReplayEqualsNaiveAtEverySeq(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range sweep.Size(5, 40, 40) {
		n := 20 + r.IntN(120)
		script := make([]string, n)
		for i := range script {
			switch x := r.IntN(10); {
			case x < 2 && i > 0:
				script[i] = fmt.Sprintf("r%d", r.IntN(i))
			case x < 3:
				script[i] = "c"
			default:
				script[i] = "e"
			}
		}
		src := build(t, script...)
		cache, snapCache := &memCache{}, &memCache{}
		for k := int64(-1); k < int64(n); k++ {
			want := naive(src.evs, k)
			got, _ := replayTo(t, src, k, replay.WithSnapshotEvery(1+round%5), replay.WithMemoryLimit(64))
			require.Equal(t, want, got, "round %d seq %d script %v", round, k, script)
			got, _ = replayTo(t, src, k, replay.WithCache(cache), replay.WithSnapshotEvery(3))
			require.Equal(t, want, got, "with cache: round %d seq %d", round, k)
			got, _ = replaySnapTo(t, src, k, replay.WithSnapshotEvery(1+round%5), replay.WithMemoryLimit(64))
			require.Equal(t, want, got, "snapshots: round %d seq %d script %v", round, k, script)
			got, _ = replaySnapTo(t, src, k, replay.WithCache(snapCache), replay.WithSnapshotEvery(3))
			require.Equal(t, want, got, "snapshots with cache: round %d seq %d", round, k)
		}
	}
}

// A rollback near the end costs the events since the nearest kept state,
// not a replay from zero.
func TestRollbackDoesNotReplayFromZero(t *testing.T) {
	script := make([]string, 10000)
	for i := range script {
		script[i] = "e"
	}
	script[9990] = "r9980"
	src := build(t, script...)
	_, res := replayTo(t, src, src.Seq(), replay.WithSnapshotEvery(100))
	require.Less(t, res.Events, int64(10000+200), "events read, re-reads included")
	require.Equal(t, 1, res.Rollbacks)
}

// A stored state at a checkpoint lets a later replay start there; a stored
// state whose checkpoint no longer matches the log is not used.
func TestStoredStates(t *testing.T) {
	script := make([]string, 3000)
	for i := range script {
		script[i] = "e"
		if i%500 == 499 {
			script[i] = "c"
		}
	}
	src := build(t, script...)
	cache := &memCache{}
	first, res := replayTo(t, src, src.Seq(), replay.WithCache(cache))
	require.Equal(t, int64(-1), res.FromSnapshot)
	src.read = 0
	again, res := replayTo(t, src, src.Seq(), replay.WithCache(cache))
	require.Equal(t, first, again)
	require.Equal(t, int64(2999), res.FromSnapshot)
	require.Less(t, src.read, 10, "started from the last checkpoint")

	// Up to an earlier seq: the nearest stored state before it.
	got, res := replayTo(t, src, 1700, replay.WithCache(cache))
	require.Equal(t, naive(src.evs, 1700), got)
	require.Equal(t, int64(1499), res.FromSnapshot)

	// The log changed under the cache (a different checkpoint digest at
	// 2999): that state is ignored, the one stored before it is used
	// (states are stored at checkpoints at least 1024 events apart).
	changed := build(t, script...)
	changed.evs[2999].Data = json.RawMessage(`{"log":"sha256:` + fmt.Sprintf("%064d", 0) + `"}`)
	got, res = replayTo(t, changed, changed.Seq(), replay.WithCache(cache))
	require.Equal(t, naive(changed.evs, changed.Seq()), got)
	require.Equal(t, int64(1499), res.FromSnapshot)
}

func TestCheckDigests(t *testing.T) {
	src := build(t, "e", "e", "c", "e", "c")
	_, res := replayTo(t, src, src.Seq(), replay.CheckDigests())
	require.Equal(t, 2, res.Checkpoints)
	require.Equal(t, 2, res.Verified)

	// One character changed inside a covered event's data, after the
	// checkpoint's digest was computed.
	bad := build(t, "e", "e", "c", "e", "c")
	bad.evs[1].Data = json.RawMessage(`{"a":3}`)
	p := &seqs{}
	_, err := replay.Replay(context.Background(), bad, []projection.Projection{p}, replay.CheckDigests())
	var de *replay.DigestError
	require.ErrorAs(t, err, &de)
	require.ErrorIs(t, err, replay.ErrDigest)
	require.Equal(t, int64(2), de.Seq)
	require.Empty(t, de.Projection)
}

func TestCheckStateDigests(t *testing.T) {
	src := build(t, "e", "e")
	p := &seqs{}
	p.Apply(src.evs[0])
	p.Apply(src.evs[1])
	good, err := projection.StateDigest(p)
	require.NoError(t, err)
	d := eventlog.NewDigest()
	for _, e := range src.evs {
		d.Add(e)
	}
	for _, tc := range []struct {
		name       string
		state      string
		verified   int
		unchecked  int
		projection string
	}{
		{"known and right", fmt.Sprintf(`{"projection":"seqs/v1","digest":%q}`, good), 1, 0, ""},
		{"known and wrong", fmt.Sprintf(`{"projection":"seqs/v1","digest":"sha256:%064d"}`, 0), 0, 0, "seqs/v1"},
		{"unknown projection", fmt.Sprintf(`{"projection":"other/v1","digest":"sha256:%064d"}`, 0), 0, 1, ""},
		{"unknown version", fmt.Sprintf(`{"projection":"seqs/v2","digest":"sha256:%064d"}`, 0), 0, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &memLog{evs: append(append([]eventlog.Event(nil), src.evs...), eventlog.Event{Seq: 2, Type: eventlog.TypeCheckpoint,
				Data: json.RawMessage(fmt.Sprintf(`{"log":%q,"state":%s}`, d.String(), tc.state))})}
			res, err := replay.Replay(context.Background(), log, []projection.Projection{&seqs{}}, replay.CheckDigests())
			if tc.projection != "" {
				var de *replay.DigestError
				require.ErrorAs(t, err, &de)
				require.Equal(t, tc.projection, de.Projection)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.verified, res.Verified)
			require.Equal(t, tc.unchecked, res.Unchecked)
		})
	}
}

func TestBudget(t *testing.T) {
	src := build(t, "e", "e", "e", "e", "e", "e")
	for _, tc := range []struct {
		name   string
		budget replay.Budget
		seq    int64
	}{
		{"events", replay.Budget{Events: 4}, 3},
		{"bytes", replay.Budget{Bytes: 3 * 50}, 2},
		{"tokens", replay.Budget{Tokens: 13}, 0},
		{"enough", replay.Budget{Events: 6}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &seqs{}
			res, err := replay.Replay(context.Background(), src, []projection.Projection{p}, replay.WithBudget(tc.budget))
			require.Equal(t, tc.seq, res.Seq)
			require.Equal(t, naive(src.evs, tc.seq), p.applied, "the state rebuilt so far comes back")
			if tc.seq == src.Seq() {
				require.NoError(t, err)
				require.Empty(t, res.Degraded)
				return
			}
			require.ErrorIs(t, err, replay.ErrReplayTooLarge)
			require.Len(t, res.Degraded, 1)
			require.Equal(t, "budget", res.Degraded[0].Kind)
			require.Equal(t, tc.seq+1, res.Degraded[0].Seq)
		})
	}
}

func TestDegradedDataReported(t *testing.T) {
	src := &memLog{evs: []eventlog.Event{
		{Seq: 0, Type: "user/message", Data: json.RawMessage(`{"text":5}`)},
		{Seq: 1, Type: "user/message", Data: json.RawMessage(`{"text":"ok"}`)},
	}}
	res, err := replay.Replay(context.Background(), src, []projection.Projection{projection.NewTranscript()})
	require.NoError(t, err)
	require.Len(t, res.Degraded, 1)
	require.Equal(t, replay.Degradation{Kind: "data", Seq: 0, Projection: "transcript/v1", Reason: res.Degraded[0].Reason}, res.Degraded[0])
	require.Contains(t, res.Degraded[0].Reason, "text")
}

// big is a projection whose state grows by per bytes an event (1 KiB
// when per is 0).
type big struct {
	n        int
	per      int
	shrinkAt int64 // when > 0, the state empties at this seq and stays empty
	marshals *int
}

func (b *big) size() int { return cmp.Or(b.per, 1024) }

func (b *big) Name() string { return "big" }
func (b *big) Version() int { return 1 }
func (b *big) Apply(e eventlog.Event) {
	switch {
	case b.shrinkAt > 0 && e.Seq >= b.shrinkAt:
		b.n = 0
	default:
		b.n++
	}
}
func (b *big) Reset() { b.n = 0 }
func (b *big) UnmarshalState(x []byte) error {
	b.n = (len(x) - 2) / b.size()
	return nil
}
func (b *big) MarshalState() ([]byte, error) {
	*b.marshals++
	return []byte(`"` + strings.Repeat("a", b.n*b.size()) + `"`), nil
}

// A large state is marshalled at growing intervals: replay stays linear,
// and the cache keeps at most maxStored states.
func TestLargeStatesKeptSparingly(t *testing.T) {
	script := make([]string, 20000)
	for i := range script {
		script[i] = "e"
		if i%100 == 99 {
			script[i] = "c"
		}
	}
	src := build(t, script...)
	marshals := 0
	cache := &memCache{}
	_, err := replay.Replay(context.Background(), src, []projection.Projection{&big{marshals: &marshals}},
		replay.WithSnapshotEvery(100), replay.WithCache(cache), replay.WithMemoryLimit(1<<30))
	require.NoError(t, err)
	require.Less(t, marshals, 40, "200 checkpoints, but a state of n KiB waits 4n events")

	// 64 bytes an event: worth storing (loading one costs less than the
	// events it saves), and kept to the limit.
	marshals = 0
	_, err = replay.Replay(context.Background(), src, []projection.Projection{&big{per: 64, marshals: &marshals}},
		replay.WithSnapshotEvery(100), replay.WithCache(cache), replay.WithMemoryLimit(1<<30))
	require.NoError(t, err)
	states := 0
	for k := range cache.m {
		if strings.Contains(k, "/snap-big-v1-") {
			states++
		}
	}
	require.Positive(t, states)
	require.LessOrEqual(t, states, 16, "stored states past the limit are deleted")
}

// A stored state is written and loaded only when loading it costs less
// than applying the events it saves: a state of 1 KiB an event never is
// (the replay from zero wins), a small one always is.
func TestStoredStatesOnlyWhenWorthLoading(t *testing.T) {
	script := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "e"
			if i%100 == 99 {
				out[i] = "c"
			}
		}
		return out
	}
	short, long := build(t, script(3000)...), build(t, script(14000)...)
	for _, tc := range []struct {
		name   string
		src    *memLog
		p      func(marshals *int) projection.Projection
		n      int // the state's n at the end
		stored bool
	}{
		{"1 KiB an event", long, func(m *int) projection.Projection { return &big{marshals: m} }, 13860, false},
		{"8 bytes an event", short, func(m *int) projection.Projection { return &big{per: 8, marshals: m} }, 2970, true},
		// Once the emptied state has been kept (the next kept state of a
		// large one comes late), storing is tried again.
		{"1 KiB an event, emptied at seq 2000", long, func(m *int) projection.Projection { return &big{shrinkAt: 2000, marshals: m} }, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := &memCache{}
			for run := range 2 {
				marshals, uncached := 0, 0
				p := tc.p(&marshals)
				res, err := replay.Replay(context.Background(), tc.src, []projection.Projection{p}, replay.WithCache(cache))
				require.NoError(t, err)
				require.Equal(t, tc.n, p.(*big).n, "run %d", run)
				if run == 1 {
					require.Equal(t, tc.stored, res.FromSnapshot >= 0, "from a stored state: %d", res.FromSnapshot)
				}
				_, err = replay.Replay(context.Background(), tc.src, []projection.Projection{tc.p(&uncached)})
				require.NoError(t, err)
				if !tc.stored {
					// A state found not worth storing once is not
					// marshalled again only to find the same.
					require.LessOrEqual(t, marshals-uncached, 1, "run %d", run)
				}
			}
			require.Equal(t, tc.stored, len(cache.m) > 0, "stored: %v", slices.Collect(maps.Keys(cache.m)))
		})
	}
}

// A damaged stored state is passed over, never a panic.
func TestDamagedStoredState(t *testing.T) {
	script := make([]string, 2100)
	for i := range script {
		script[i] = "e"
	}
	script[2049] = "c"
	src := build(t, script...)
	cache := &memCache{}
	_, res := replayTo(t, src, src.Seq(), replay.WithCache(cache))
	require.Equal(t, int64(-1), res.FromSnapshot)
	var stored map[string]json.RawMessage
	for k, v := range cache.m {
		if strings.Contains(k, "/snap-") {
			require.NoError(t, json.Unmarshal(v, &stored))
		}
	}
	require.NotNil(t, stored)
	damaged := func(key, value string) string {
		m := maps.Clone(stored)
		m[key] = json.RawMessage(value)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return string(b)
	}
	for _, bad := range []string{
		damaged("projections", `[]`), // states present, names missing
		damaged("states", `[]`),
		damaged("projections", `["other/v1"]`),
		`not json`,
	} {
		for k := range cache.m {
			if strings.Contains(k, "/snap-") {
				cache.m[k] = []byte(bad)
			}
		}
		got, res := replayTo(t, src, src.Seq(), replay.WithCache(cache))
		require.Equal(t, naive(src.evs, src.Seq()), got)
		require.Equal(t, int64(-1), res.FromSnapshot, bad)
	}
}

// Chained rollbacks — a retry loop where each rollback goes back to the
// previous rollback — cost linear work: every rollback event is applied
// once. Regression: the state after a rollback was not kept, so restoring
// to it applied the previous rollback again, recursively: 20 chained
// rollbacks applied 2^20-1 of them (19 s for 41 events).
func TestChainedRollbacksAreLinear(t *testing.T) {
	const k = 16 // enough to show: without the fix, 65,535 rollbacks applied
	script := []string{"e"}
	prev := 0 // each rollback goes back to the previous one (the first to seq 0)
	for range k {
		script = append(script, "e", fmt.Sprintf("r%d", prev))
		prev = len(script) - 1
	}
	src := build(t, script...)
	for _, every := range []int{1, 1024} {
		for _, replayFn := range []func(*testing.T, replay.Source, int64, ...replay.Option) ([]int64, replay.Result){replayTo, replaySnapTo} {
			got, res := replayFn(t, src, src.Seq(), replay.WithSnapshotEvery(every))
			require.Equal(t, naive(src.evs, src.Seq()), got)
			require.Equal(t, k, res.Rollbacks, "each rollback applied once (snapshot every %d)", every)
			require.LessOrEqual(t, res.Events, int64(2*len(script)), "events read (snapshot every %d)", every)
		}
	}
}
