package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/bench/workload"
)

// TestEveryVariantRuns runs each measurement of every scenario in this
// process, on tiny sizes, and checks that it measured what it names.
func TestEveryVariantRuns(t *testing.T) {
	ctx := context.Background()
	const readTurns = 3
	fixtures := t.TempDir()
	opsSize := int64(50 << 10)
	require.NoError(t, prepare(ctx, fixtures, readTurns, []int64{opsSize}))
	readEvents := len(workload.Generate(workload.Config{Seed: 1, Turns: readTurns}))
	evs := workload.Generate(workload.Config{Seed: 1, Turns: 2})

	for _, v := range appendVariants {
		t.Run("append/"+v.name, func(t *testing.T) {
			m, err := runAppend(ctx, v.name, t.TempDir(), 4, 20*time.Millisecond, evs)
			require.NoError(t, err)
			require.Positive(t, m["events"])
			require.Positive(t, m["events/s"])
			require.LessOrEqual(t, m["p50-ns"], m["p99-ns"])
			if fsyncs, ok := m["events/fsync"]; ok {
				require.GreaterOrEqual(t, fsyncs, 1.0)
			}
		})
	}
	t.Run("paired", func(t *testing.T) {
		m, err := runPaired(ctx, t.TempDir(), 20*time.Millisecond, evs)
		require.NoError(t, err)
		require.Positive(t, m["events"])
		require.LessOrEqual(t, m["p50-ns"], m["p99-ns"])
		require.LessOrEqual(t, m["bare-p50-ns"], m["bare-p99-ns"])
		require.InDelta(t, m["p50-ns"]/m["bare-p50-ns"], m["p50-ratio"], 1e-9)
	})
	t.Run("floor", func(t *testing.T) {
		m, err := floorMetrics(ctx, t.TempDir(), 4, 20*time.Millisecond)
		require.NoError(t, err)
		require.Positive(t, m["fsync-µs"])
		require.Positive(t, m["x-µs"])
		require.InDelta(t, 2*m["fsync-µs"]/(m["fsync-µs"]+m["x-µs"]), m["ceiling"], 1e-9)
		_, err = floorMetrics(ctx, t.TempDir(), 4, 0)
		require.ErrorContains(t, err, "no round", "no budget, no round: an error, not a median of nothing")
	})
	t.Run("append/unknown", func(t *testing.T) {
		_, err := runAppend(ctx, "nope", t.TempDir(), 1, time.Millisecond, evs)
		require.ErrorContains(t, err, "no append variant")
	})
	for _, v := range readVariants() {
		t.Run("read/"+v, func(t *testing.T) {
			m, err := runRead(ctx, v, fixtures, 2)
			require.NoError(t, err)
			require.Equal(t, float64(readEvents), m["events"], "a pass reads every event")
			require.Positive(t, m["MB/s"])
			require.Positive(t, m["allocs/event"])
		})
	}
	for _, v := range opsVariants {
		t.Run("ops/"+v, func(t *testing.T) {
			m, err := runOps(ctx, v, fixtures, opsSize, 2)
			require.NoError(t, err)
			require.Positive(t, m["ns/op"])
		})
	}
	cliSizes := []int64{20 << 10, 60 << 10}
	require.NoError(t, prepareCLI(ctx, fixtures, cliSizes))
	exe := testLogtool(t)
	for _, size := range cliSizes {
		for _, v := range cliVariants {
			t.Run(fmt.Sprintf("cli/%d/%s", size, v), func(t *testing.T) {
				m, err := runCLI(ctx, exe, v, fixtures, t.TempDir(), size, 2)
				require.NoError(t, err)
				require.Positive(t, m["ns/op"])
				require.Positive(t, m["cli-maxrss-B"])
				if !strings.HasPrefix(v, "export") {
					require.Positive(t, m["stdout-B"], "it printed")
				}
			})
		}
	}
	t.Run("sizes", func(t *testing.T) {
		m, err := runSizes(ctx, t.TempDir(), 2, true)
		require.NoError(t, err)
		for _, r := range sizeRows {
			require.Positive(t, m[r.metric], r.metric)
		}
		require.Less(t, m["zstd-B"], m["raw-B"])
		require.LessOrEqual(t, m["recompressed-B"], m["zstd-B"])
		require.Less(t, m["zstd19-B"], m["jsonl-B"])
		require.GreaterOrEqual(t, m["snapshot-written-B"], m["snapshot-B"])
	})
}

// TestTargetsVerdicts checks the targets table on made-up results: a
// target is met or missed on the median of its per-run ratios.
func TestTargetsVerdicts(t *testing.T) {
	r := &Results{Config: Config{Name: "test", Runs: 3, Appenders: []int{1, 64}}, ByKey: map[string][]Metrics{}}
	set := func(key, metric string, vs ...float64) {
		ms := r.ByKey[key]
		for len(ms) < len(vs) {
			ms = append(ms, Metrics{})
		}
		for i, v := range vs {
			ms[i][metric] = v
		}
		r.ByKey[key] = ms
	}
	a64 := func(v string) string { return fmt.Sprintf("append/64/%s", v) }
	set(a64(rawVariant), "events/s", 100, 200, 90)
	set(a64(rawVariant), "events/fsync", 60, 40, 55)
	set(a64(noFsyncVariant), "events/s", 1000, 1000, 1000)
	set(a64(unredactedVariant), "events/s", 105, 200, 110)
	for i, v := range appendVariants[altStart():] {
		set(a64(v.name), "events/s", 40, 150, float64(10+i)) // best alternative: 40, 150, 10+last
	}
	set("paired/1", "p50-ratio", 1, 1.05, 2)
	set("floor/64", "fsync-µs", 200, 300, 250)
	set("floor/64", "x-µs", 100, 100, 150)
	set("floor/64", "ceiling", 4.0/3, 1.5, 1.25)
	md := r.Markdown("cmd")
	for _, want := range []string{
		// ratios 2.5, 1.33, 90/14 = 6.43: median 2.5
		"| durable append, 64 appenders: events/s ÷ the best alternative's | 2.50× [1.33×–6.43×] | ≥ 2.00× | met |",
		"| durable append, 64 appenders: events per fsync | 55.0 [40.0–60.0] | ≥ 50.0 | met |",
		"| durable append, 64 appenders: events/s ÷ the same with no fsync | 0.10× [0.09×–0.20×] | ≥ 0.50× | missed |",
		// ratios 0.95, 1, 0.82: median 0.95
		"| durable append, 64 appenders: events/s with redaction ÷ without | 0.95× [0.82×–1.00×] | ≥ 0.90× | met |",
		"| one appender: p50 latency ÷ bare write+fdatasync's (alternating event by event) | 1.05× [1.00×–2.00×] | ≤ 1.10× | met |",
		"| raw read ÷ sonic decode (events/s) | — | ≥ 1.20× | not measured |",
		"- durable append, 64 appenders: events/s ÷ the same with no fsync: sessionlog raw 100 [90.0–200]; no fsync 1000. Why: a write waits for the previous fsync",
		// The floor this run measured: medians 250 µs, 100 µs, 1.33.
		"; here 64 goroutines spinning 1µs each, no library, were back 100 µs after a 250 µs fsync: a ceiling of 1.33× (RoundFloor)",
		"### Durable append",
	} {
		require.Contains(t, md, want)
	}

	// The summary (docs/performance.md with -tables) holds the machine,
	// the targets and the reasons of the missed ones, and cites the tables.
	sum := r.Summary("cmd", "bench/results/day/harness.md")
	for _, want := range []string{
		"| machine | |",
		"| durable append, 64 appenders: events/s ÷ the same with no fsync | 0.10× [0.09×–0.20×] | ≥ 0.50× | missed |",
		". Why: a write waits for the previous fsync (docs/format.md §9)",
		"`bench/results/day/harness.md`",
	} {
		require.Contains(t, sum, want)
	}
	require.NotContains(t, sum, "### Durable append")
}

// TestMissedSectionReasonOnce checks that a reason repeated by the next
// target with one is printed once, the repeat as "as above", and that a
// different reason after it is printed in full.
func TestMissedSectionReasonOnce(t *testing.T) {
	r := &Results{}
	var b strings.Builder
	r.missedSection(&b, []target{
		{name: "a", why: "fsync bounds it"},
		{name: "b", why: "fsync bounds it"},
		{name: "c"},
		{name: "d", why: "zstd bounds it"},
		{name: "e", why: "zstd bounds it"},
		{name: "f", why: "fsync bounds it"},
	}, false)
	require.Equal(t, "Missed, with the figures behind each (medians) and what bounds it:\n\n"+
		"- a. Why: fsync bounds it\n"+
		"- b. Why: as above\n"+
		"- c\n"+
		"- d. Why: zstd bounds it\n"+
		"- e. Why: as above\n"+
		"- f. Why: fsync bounds it\n\n", b.String())
}
