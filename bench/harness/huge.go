package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/bench/internal/benchfs"
	"github.com/sessionlog/sessionlog/bench/workload"
	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// The huge scenario: one raw session of Config.HugeBytes of plain JSONL
// (1 GiB in the long run), written once, on which the operations an agent
// runs on its whole history are timed one at a time, each in its own
// child process, with that process's peak RSS.
const (
	hugeDir       = "huge"       // the session's store, under the fixtures folder
	hugeIDFile    = "huge.id"    // its ID
	hugeBytesFile = "huge.bytes" // its plain-JSONL bytes, decimal
)

// hugeVariants are the huge scenario's variants, in the order of their
// rows. "full check" opens the session after its checked record was
// deleted (as after a crash): the whole log is read.
var hugeVariants = []string{
	"Stat",
	"Open for writing",
	"Open for writing, full check",
	"replay agent/v1",
	"replay transcript/v1",
	"verify",
}

// compactEvery is how much plain JSONL the huge session's agent writes
// between two compactions of its context (a context/compacted event): about
// what a 200k-token context window holds. A session that long is only
// possible with compactions; the transcript holds the messages since the
// last one.
const compactEvery = 800 << 10

// prepareHuge writes the huge session: workload turns (seed 2) until
// target bytes of plain JSONL (see writeLongSession), with checkpoints,
// and records its ID and size.
func prepareHuge(ctx context.Context, fixtures string, target int64) error {
	fsys, _ := benchfs.New(true)
	store := file.New(fsys, filepath.Join(fixtures, hugeDir), handle.WithEncoding(handle.EncodingRaw))
	id, n, err := writeLongSession(ctx, store, target, 2, true)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(fixtures, hugeIDFile), []byte(id), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(fixtures, hugeBytesFile), []byte(strconv.FormatInt(n, 10)), 0o600)
}

// writeLongSession writes a session of a long-running agent to store:
// workload turns (of seed) until target bytes of plain JSONL, a Flush per
// turn, a context/compacted event after the turn that passes every
// compactEvery bytes, and, with checkpoints, a checkpoint with the
// agent/v1 state after every eighth of it (what verify replays), then
// closes it. Its store should not fsync: only its bytes matter. The events
// are made turn by turn, never all held. It returns the session's ID and
// its plain-JSONL bytes.
func writeLongSession(ctx context.Context, store *file.Store, target int64, seed uint64, checkpoints bool) (string, int64, error) {
	h, err := store.Create(ctx)
	if err != nil {
		return "", 0, err
	}
	g := workload.New(workload.Config{Seed: seed, Turns: 1 << 30})
	agent := projection.NewAgent()
	var n int64
	var line []byte
	every, next := max(target/8, 1), max(target/8, 1)
	nextCompact := int64(compactEvery)
	summary := fmt.Appendf(nil, `{"summary":%q}`, strings.Repeat("The work so far, summarised. ", 70))
	fail := func(err error) (string, int64, error) { h.Close(); return "", 0, err }
	for n < target {
		turn := g.NextTurn()
		var evs []eventlog.Event
		for _, e := range turn {
			evs = append(evs, eventToLog(e, -1))
		}
		if n+workloadBytes(turn, &line) >= nextCompact {
			nextCompact += compactEvery
			evs = append(evs, eventlog.Event{Type: "context/compacted", Time: turn[len(turn)-1].Time, Data: summary})
		}
		for _, ev := range evs {
			if ev.Seq, err = h.Append(ctx, ev); err != nil {
				return fail(err)
			}
			agent.Apply(ev)
			n += int64(len(eventlog.AppendCanon(line[:0], ev))) + 1
		}
		if err := h.Flush(ctx); err != nil {
			return fail(err)
		}
		if checkpoints && (n >= next || n >= target) {
			next += every
			if _, err := checkpoint.Create(ctx, h, checkpoint.WithState(agent)); err != nil {
				return fail(err)
			}
		}
	}
	return h.ID(), n, h.Close()
}

// workloadBytes returns the plain-JSONL bytes of evs (buf is scratch).
func workloadBytes(evs []workload.Event, buf *[]byte) int64 {
	var n int64
	for _, e := range evs {
		*buf = e.AppendJSON((*buf)[:0])
		n += int64(len(*buf)) + 1
	}
	return n
}

// runHuge runs one huge variant, reps times for the quick ones (the
// median is kept) and once for a full read, and returns its time, and for
// a replay its events/s, MB/s of plain JSONL and the heap its projection
// holds once it is done ("state-B": live heap after a GC, less the live
// heap before the replay).
func runHuge(ctx context.Context, variant, fixtures string, reps int) (Metrics, error) {
	idb, err := os.ReadFile(filepath.Join(fixtures, hugeIDFile))
	if err != nil {
		return nil, err
	}
	nb, err := os.ReadFile(filepath.Join(fixtures, hugeBytesFile))
	if err != nil {
		return nil, err
	}
	jsonl, err := strconv.ParseInt(string(nb), 10, 64)
	if err != nil {
		return nil, err
	}
	id := string(idb)
	store := file.New(afero.NewOsFs(), filepath.Join(fixtures, hugeDir))
	noop := func() error { return nil }
	var w handle.Handle
	open := func() error { var err error; w, err = store.Open(ctx, id, handle.ReadWrite); return err }
	closeW := func() error { return w.Close() }
	switch variant {
	case "Stat":
		return timeOps(reps, noop, func() error { _, err := store.Stat(ctx, id); return err }, noop)
	case "Open for writing":
		return timeOps(reps, noop, open, closeW)
	case "Open for writing, full check":
		return timeOps(1, func() error { return store.DeleteDerived(ctx, id, checkedKey) }, open, closeW)
	case "replay agent/v1", "replay transcript/v1", "verify":
	default:
		return nil, fmt.Errorf("harness: no huge variant %q", variant)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	t0 := time.Now()
	h, err := store.Open(ctx, id, handle.ReadOnly)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	var p projection.Projection
	var events int64
	if variant == "verify" { // as logtool verify runs it: every built-in projection known
		res, err := checkpoint.Verify(ctx, h, projection.NewAgent(), projection.NewTranscript())
		if err != nil {
			return nil, err
		}
		events = res.Events
	} else {
		newP, err := projectionNamed(variant[len("replay "):])
		if err != nil {
			return nil, err
		}
		p = newP()
		res, err := replay.Replay(ctx, h, []projection.Projection{p})
		if err != nil {
			return nil, err
		}
		events = res.Events
	}
	el := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	state := float64(0)
	if ms.HeapAlloc > base {
		state = float64(ms.HeapAlloc - base)
	}
	runtime.KeepAlive(p)
	return Metrics{"ns/op": float64(el.Nanoseconds()), "events/s": float64(events) / el.Seconds(),
		"MB/s": float64(jsonl) / 1e6 / el.Seconds(), "state-B": state, "jsonl-B": float64(jsonl)}, nil
}
