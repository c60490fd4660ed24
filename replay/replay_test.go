package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// seqs is a test projection whose state is the seqs of the events it was
// given, in order: any mistake in rollback handling shows in it.
type seqs struct{ applied []int64 }

func (s *seqs) Name() string                  { return "seqs" }
func (s *seqs) Version() int                  { return 1 }
func (s *seqs) Apply(e eventlog.Event)        { s.applied = append(s.applied, e.Seq) }
func (s *seqs) Reset()                        { s.applied = nil }
func (s *seqs) MarshalState() ([]byte, error) { return json.Marshal(s.applied) }
func (s *seqs) UnmarshalState(b []byte) error {
	s.applied = nil
	return json.Unmarshal(b, &s.applied)
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
	p := &seqs{}
	res, err := replay.Replay(context.Background(), src, []projection.Projection{p}, append(opts, replay.UpTo(upTo))...)
	require.NoError(t, err)
	return p.applied, res
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
// every seq.
func TestReplayEqualsNaiveAtEverySeq(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
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
		cache := &memCache{}
		for k := int64(-1); k < int64(n); k++ {
			want := naive(src.evs, k)
			got, _ := replayTo(t, src, k, replay.WithSnapshotEvery(1+round%5), replay.WithMemoryLimit(64))
			require.Equal(t, want, got, "round %d seq %d script %v", round, k, script)
			got, _ = replayTo(t, src, k, replay.WithCache(cache), replay.WithSnapshotEvery(3))
			require.Equal(t, want, got, "with cache: round %d seq %d", round, k)
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

// big is a projection whose state grows by about 1 KiB an event.
type big struct {
	n        int
	marshals *int
}

func (b *big) Name() string         { return "big" }
func (b *big) Version() int         { return 1 }
func (b *big) Apply(eventlog.Event) { b.n++ }
func (b *big) Reset()               { b.n = 0 }
func (b *big) UnmarshalState(x []byte) error {
	b.n = (len(x) - 2) / 1024
	return nil
}
func (b *big) MarshalState() ([]byte, error) {
	*b.marshals++
	return []byte(`"` + strings.Repeat("a", b.n*1024) + `"`), nil
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
	states := 0
	for k := range cache.m {
		if strings.Contains(k, "/snap-") {
			states++
		}
	}
	require.LessOrEqual(t, states, 16, "stored states past the limit are deleted")
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
