package eventlog_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

var randTypes = []string{"assistant/chunk", "assistant/chunk", "assistant/chunk", "user/message", "tool/call", "step/start", "a.b:c_d-e"}

// randomData returns compact JSON data, or nil.
func randomData(rng *rand.Rand) json.RawMessage {
	switch rng.IntN(8) {
	case 0:
		return nil
	case 1:
		return json.RawMessage(strconv.FormatInt(rng.Int64N(1e12)-5e11, 10))
	case 2:
		return json.RawMessage(`"\u0041\n\"q\"\/ é"`) // escapes kept as stored
	case 3:
		return json.RawMessage(`[]`)
	default:
		v := map[string]any{"text": strings.Repeat("ab c", rng.IntN(20)), "n": rng.IntN(1000), "ok": rng.IntN(2) == 0}
		if rng.IntN(3) == 0 {
			v["nested"] = []any{1, "x", nil, map[string]any{"k": []any{}}}
		}
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return b
	}
}

func randomTime(rng *rand.Rand) int64 {
	switch rng.IntN(6) {
	case 0:
		return 0
	case 1:
		return rng.Int64() // far future, large digits
	default:
		return testTime + rng.Int64N(1e6)
	}
}

// randomEvents returns n events from seq first, with runs of one type.
func randomEvents(rng *rand.Rand, first int64, n int) []eventlog.Event {
	evs := make([]eventlog.Event, 0, n)
	for len(evs) < n {
		typ := randTypes[rng.IntN(len(randTypes))]
		for range min(1+rng.IntN(12), n-len(evs)) {
			evs = append(evs, eventlog.Event{Seq: first + int64(len(evs)), Type: typ, Time: randomTime(rng), Data: randomData(rng)})
		}
	}
	return evs
}

// expectedRows counts the rows an Encoder packing types writes for evs
// when no row reaches the size limit: one per run of a packed type, one
// per other event.
func expectedRows(evs []eventlog.Event, packed map[string]bool) int {
	n := 0
	for i, e := range evs {
		if i == 0 || !packed[e.Type] || evs[i-1].Type != e.Type {
			n++
		}
	}
	return n
}

func TestEncoderRoundTrip(t *testing.T) {
	encoders := []struct {
		name   string
		types  []string
		packed map[string]bool
	}{
		{"default", nil, map[string]bool{"assistant/chunk": true}},
		{"two types", []string{"tool/call", "assistant/chunk"}, map[string]bool{"assistant/chunk": true, "tool/call": true}},
		{"none", []string{}, map[string]bool{}},
	}
	for _, ec := range encoders {
		t.Run(ec.name, func(t *testing.T) {
			enc := eventlog.NewEncoder(ec.types)
			for seed := uint64(1); seed <= 20; seed++ {
				rng := rand.New(rand.NewPCG(seed, 7))
				first := int64(0)
				var h eventlog.Header
				if seed%2 == 0 {
					first = 1 + rng.Int64N(1000)
					h = logfile.NewHeader(testID, testTime)
					h.Parent = &eventlog.Parent{ID: testParent, Seq: first - 1, Mode: eventlog.ModeFork}
				} else {
					h = logfile.NewHeader(testID, testTime)
				}
				line, err := eventlog.EncodeHeader(h)
				require.NoError(t, err)
				log := append(line, '\n')
				evs := randomEvents(rng, first, 1+rng.IntN(300))
				rowCount := 0
				for rest := evs; len(rest) > 0; {
					batch := rest[:1+rng.IntN(len(rest))]
					rest = rest[len(batch):]
					for _, e := range batch {
						require.NoError(t, e.Validate())
					}
					before := len(log)
					log = enc.AppendRows(log, batch)
					require.Equal(t, byte('\n'), log[len(log)-1])
					lines := splitLines(log[before:])
					require.Len(t, lines, expectedRows(batch, ec.packed), "seed %d", seed)
					rowCount += len(lines)
					requireRowsHold(t, lines, batch, ec.packed)
				}
				res := readAll(t, bytes.NewReader(log))
				requireClean(t, res, len(log), evs)
				require.Equal(t, first+int64(len(evs)), res.next)
				require.Len(t, splitLines(log), rowCount+1)
			}
		})
	}
}

// requireRowsHold checks that lines hold exactly evs: a plain row is
// canon(e), a packed row holds a run of a packed type.
func requireRowsHold(t *testing.T, lines [][]byte, evs []eventlog.Event, packed map[string]bool) {
	t.Helper()
	k := 0
	for _, l := range lines {
		require.LessOrEqual(t, len(l)-1, eventlog.MaxRowSize)
		got, err := eventlog.DecodeRow(l[:len(l)-1])
		require.NoError(t, err)
		require.Equal(t, evs[k:k+len(got)], got)
		if len(got) == 1 {
			require.Equal(t, string(eventlog.AppendCanon(nil, evs[k]))+"\n", string(l), "a plain row is canon(e)")
		} else {
			require.True(t, packed[got[0].Type], "packed row of type %q", got[0].Type)
			require.Contains(t, string(l), `"n":`+strconv.Itoa(len(got))+`,`)
		}
		k += len(got)
	}
	require.Equal(t, len(evs), k)
}

func TestEncoderPacking(t *testing.T) {
	evs := []eventlog.Event{
		ev(12, "assistant/chunk", 1764450000200, `{"text":"He"}`),
		ev(13, "assistant/chunk", 1764450000201, `{"text":"llo"}`),
		ev(14, "assistant/chunk", 1764450000205, `{"text":"!"}`),
		ev(15, "tool/call", 7, `{"id":"c1"}`),
		ev(16, "tool/call", 8, ""),
		ev(17, "assistant/chunk", 9, `{"text":"x"}`),
		ev(18, "user/message", 10, ""),
	}
	canon := func(i int) string { return string(eventlog.AppendCanon(nil, evs[i])) + "\n" }
	tests := []struct {
		name  string
		types []string
		want  string
	}{
		{
			name: "default packs assistant/chunk only; a group of one is a plain row",
			want: `{"seq":12,"type":"assistant/chunk","n":3,"time":[1764450000200,1764450000201,1764450000205],"data":[{"text":"He"},{"text":"llo"},{"text":"!"}]}` + "\n" +
				canon(3) + canon(4) + canon(5) + canon(6),
		},
		{
			name:  "configured type only",
			types: []string{"tool/call"},
			want: canon(0) + canon(1) + canon(2) +
				`{"seq":15,"type":"tool/call","n":2,"time":[7,8],"data":[{"id":"c1"},null]}` + "\n" +
				canon(5) + canon(6),
		},
		{
			name:  "empty list packs nothing",
			types: []string{},
			want:  canon(0) + canon(1) + canon(2) + canon(3) + canon(4) + canon(5) + canon(6),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := eventlog.NewEncoder(tt.types).AppendRows([]byte("keep\n"), evs)
			require.Equal(t, "keep\n"+tt.want, string(got))
		})
	}
	t.Run("no events appends nothing", func(t *testing.T) {
		require.Equal(t, "keep", string(eventlog.NewEncoder(nil).AppendRows([]byte("keep"), nil)))
	})
	t.Run("default pack types", func(t *testing.T) {
		types := eventlog.DefaultPackTypes()
		require.Equal(t, []string{"assistant/chunk"}, types)
		types[0] = "changed"
		require.Equal(t, []string{"assistant/chunk"}, eventlog.DefaultPackTypes(), "a copy")
	})
}

// A run whose packed row would exceed MaxRowSize is split into rows that
// each fit.
//
// An Encoder packs to MaxRowSize; under SESSIONLOG_SWEEPS=full the runs
// are of that size, by default of a limit 16 times smaller (the same
// arithmetic, without 30 MB of rows under the race detector).
func TestEncoderSplitsLargeRuns(t *testing.T) {
	require.Equal(t, eventlog.MaxRowSize, eventlog.MaxRowSizeOf(eventlog.NewEncoder(nil)))
	limit := sweep.Size(eventlog.MaxRowSize/16, eventlog.MaxRowSize, eventlog.MaxRowSize)
	size := limit * 6 / 16
	enc := eventlog.NewEncoder(nil)
	eventlog.SetMaxRowSize(enc, limit)
	var evs []eventlog.Event
	for k := range int64(5) {
		data := `"` + strings.Repeat(string(rune('a'+k)), size) + `"`
		evs = append(evs, ev(k, "assistant/chunk", testTime+k, data))
	}
	out := enc.AppendRows([]byte(hdrLine), evs)
	lines := splitLines(out)[1:]
	require.Len(t, lines, 3)
	counts := []int{}
	for _, l := range lines {
		require.LessOrEqual(t, len(l)-1, limit)
		got, err := eventlog.DecodeRow(l[:len(l)-1])
		require.NoError(t, err)
		counts = append(counts, len(got))
	}
	require.Equal(t, []int{2, 2, 1}, counts)
	require.Equal(t, string(eventlog.AppendCanon(nil, evs[4]))+"\n", string(lines[2]), "the group of one is a plain row")
	res := readAll(t, bytes.NewReader(out), func(r *eventlog.Reader) { eventlog.SetReaderMaxRowSize(r, limit) })
	requireClean(t, res, len(out), evs)
}

// With a small limit, every row fits and every packed row is as long as
// the limit allows.
func TestEncoderSplitIsTight(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	unlimited := eventlog.NewEncoder(nil)
	for round := range 200 {
		var evs []eventlog.Event
		maxData := 0
		for k := range int64(1 + rng.IntN(40)) {
			d := `"` + strings.Repeat("x", rng.IntN(60)) + `"`
			if rng.IntN(5) == 0 {
				d = ""
			}
			maxData = max(maxData, len(d))
			evs = append(evs, ev(int64(round)*100+k, "assistant/chunk", rng.Int64N(1e13), d))
		}
		limit := 0
		for _, e := range evs {
			limit = max(limit, eventlog.RowSize(e))
		}
		limit += rng.IntN(400)
		enc := eventlog.NewEncoder(nil)
		eventlog.SetMaxRowSize(enc, limit)
		lines := splitLines(enc.AppendRows(nil, evs))
		k := 0
		for i, l := range lines {
			require.LessOrEqual(t, len(l)-1, limit, "round %d row %d", round, i)
			got, err := eventlog.DecodeRow(l[:len(l)-1])
			require.NoError(t, err)
			require.Equal(t, evs[k:k+len(got)], got)
			if len(got) == 1 {
				require.Equal(t, string(eventlog.Canon(evs[k]))+"\n", string(l))
			}
			k += len(got)
			if k < len(evs) {
				grown := unlimited.AppendRows(nil, evs[k-len(got):k+1])
				require.Greater(t, len(grown)-1, limit, "round %d row %d: one more event would have fit", round, i)
			}
		}
		require.Equal(t, len(evs), k)
	}
}

func TestEncoderConcurrentUse(t *testing.T) {
	enc := eventlog.NewEncoder(nil)
	evs := randomEvents(rand.New(rand.NewPCG(9, 9)), 0, 200)
	want := enc.AppendRows(nil, evs)
	var wg sync.WaitGroup
	outs := make([][]byte, 8)
	for i := range outs {
		wg.Go(func() { outs[i] = enc.AppendRows(nil, evs) })
	}
	wg.Wait()
	for _, o := range outs {
		require.Equal(t, want, o)
	}
}
