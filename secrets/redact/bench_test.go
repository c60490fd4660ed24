package redact

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
)

// benchTurn is one agent turn shaped like the bench workload's (most
// events are short chunks; most bytes are tool results holding code):
// 40 chunks, a message, two calls and two results of about 4 KiB of Go
// source, usage.
func benchTurn() []eventlog.Event {
	var evs []eventlog.Event
	add := func(typ string, v any) {
		d, _ := json.Marshal(v)
		evs = append(evs, eventlog.Event{Type: typ, Data: d})
	}
	words := strings.Fields("the test fails because the handle is closed before the flush returns so we read the file again and check the digest of every row")
	for i := 0; i < 40; i++ {
		add("assistant/chunk", map[string]string{"text": words[i%len(words)] + " "})
	}
	add("assistant/message", map[string]string{"text": strings.Repeat("The failing test opens the session, appends three events and closes it; then it reopens and expects seq 3. ", 6)})
	src := strings.Repeat(`func (h *fileHandle) Append(ctx context.Context, events ...eventlog.Event) (int64, error) {
	if err := ctx.Err(); err != nil { // see docs/format.md §9; mail bugs@example.com
		return 0, fmt.Errorf("append to %q: %w", h.path, err)
	}
	hasCheckpoint, err := prepareBatch(h.path, events, batch); x := map[string]int{"a": 1}
	return h.append(ctx, -1, events)
}
`, 12)
	for i := 0; i < 2; i++ {
		add("tool/call", map[string]any{"id": "call_" + fill(24, csAlnum, uint32(i)), "name": "read_file", "args": map[string]string{"path": "handle/handle.go"}})
		add("tool/result", map[string]any{"id": "call_" + fill(24, csAlnum, uint32(i)), "output": src})
	}
	add("usage", map[string]any{"inputTokens": 12000, "outputTokens": 800, "model": "claude-sonnet-4-5"})
	return evs
}

// nearMissData is data full of shapes one detail away from a secret.
func nearMissData() []eventlog.Event {
	var b strings.Builder
	for i := uint32(0); i < 40; i++ {
		b.WriteString("ghp_" + fill(35, csAlnum, i) + " AKIA" + fill(15, csB32, i) + " sk-" + fill(48, csAlnum, i) + "\n")
		b.WriteString("https://user@example.com/a/b?c=d user@example.com mailto:x@y.z\n")
		b.WriteString("Host=db;Port=5432; x = y; eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.\n")
		b.WriteString("veryLongIdentifierNameForTesting_" + fill(40, csHex, i) + " " + fill(60, csB64, i) + "\n")
	}
	d, _ := json.Marshal(map[string]string{"output": b.String()})
	return []eventlog.Event{{Type: "tool/result", Data: d}}
}

func turnBytes(evs []eventlog.Event) int64 {
	n := 0
	for _, e := range evs {
		n += len(e.Data)
	}
	return int64(n)
}

// BenchmarkData runs Data over every event of a batch with nothing to
// redact (the append path's common case), beside the validation the
// append path already does (eventlog.Storable), for the ratio.
func BenchmarkData(b *testing.B) {
	for _, bc := range []struct {
		name string
		evs  []eventlog.Event
	}{{"workload", benchTurn()}, {"near-misses", nearMissData()}} {
		r := New()
		b.Run(bc.name+"/redact", func(b *testing.B) {
			cpu := startCPU()
			b.SetBytes(turnBytes(bc.evs))
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range bc.evs {
					if _, changed := r.Data(e.Data); changed {
						b.Fatal("redacted")
					}
				}
			}
			cpu.report(b, len(bc.evs))
		})
		b.Run(bc.name+"/validate", func(b *testing.B) {
			cpu := startCPU()
			b.SetBytes(turnBytes(bc.evs))
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range bc.evs {
					if _, err := eventlog.Storable(e); err != nil {
						b.Fatal(err)
					}
				}
			}
			cpu.report(b, len(bc.evs))
		})
	}
}

// cpuClock measures the CPU time the process gets: on a shared machine
// wall time counts the waits for a core too.
type cpuClock time.Duration

func startCPU() cpuClock { return cpuClock(cpuTime()) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report adds the CPU nanoseconds per event.
func (c cpuClock) report(b *testing.B, perOp int) {
	b.ReportMetric(float64(cpuTime()-time.Duration(c))/float64(b.N*perOp), "cpu-ns/event")
}

// BenchmarkDataWithSecret: a tool result holding one token, redacted.
func BenchmarkDataWithSecret(b *testing.B) {
	evs := benchTurn()
	d := evs[len(evs)-2].Data
	data := []byte(strings.Replace(string(d), "bugs@example.com", ghToken(1), 1))
	r := New()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, changed := r.Data(data); !changed {
			b.Fatal("not redacted")
		}
	}
}

// BenchmarkFastPath runs Data over the workload turn with the fast path
// (mayMatch) and without (Redactor.slow), in one process, so
// that their CPU compares on a shared machine:
//
//	go test -run '^$' -bench BenchmarkFastPath -benchtime 20000x -count 6 ./secrets/redact/
func BenchmarkFastPath(b *testing.B) {
	for _, slow := range []bool{false, true} {
		name := "fast"
		if slow {
			name = "slow"
		}
		r := New()
		r.slow = slow
		evs := benchTurn()
		b.Run(name, func(b *testing.B) {
			cpu := startCPU()
			b.SetBytes(turnBytes(evs))
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range evs {
					if _, changed := r.Data(e.Data); changed {
						b.Fatal("redacted")
					}
				}
			}
			cpu.report(b, len(evs))
		})
	}
}
