package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

// event is what each appender appends: a tool call of about 100 bytes of
// data, as bench/jetstream_test.go does.
var event = eventlog.Event{Type: "tool/call", Time: 1764450000000,
	Data: json.RawMessage(`{"text":"a streamed delta of about one hundred bytes, as an assistant chunk would carry it...."}`)}

// run is one measured run: events appended (or published), how long,
// and the latency of each Flush (or publish).
type runResult struct {
	name    string
	events  int
	dur     time.Duration
	latency []time.Duration
	msgs    int // publishes (JetStream runs)
}

func (r runResult) rate() float64 { return float64(r.events) / r.dur.Seconds() }

func (r runResult) pct(p float64) time.Duration {
	l := slices.Clone(r.latency)
	slices.Sort(l)
	if len(l) == 0 {
		return 0
	}
	return l[min(len(l)-1, int(p*float64(len(l))))]
}

// throughputRow is one store beside its floor (none for files).
type throughputRow struct {
	store runResult
	floor *runResult
}

func throughput(ctx context.Context, bin, dir string, appenders, events int) ([]throughputRow, error) {
	file, _, err := appendRun(ctx, "file store", file.New(afero.NewOsFs(), filepath.Join(dir, "files")), appenders, events)
	if err != nil {
		return nil, err
	}
	rows := []throughputRow{{store: file}}
	for _, n := range []int{1, 3} {
		p, err := natstest.StartProcs(bin, filepath.Join(dir, fmt.Sprintf("r%d", n)), n)
		if err != nil {
			return nil, err
		}
		row, err := jetStreamRow(ctx, p, n, appenders, events)
		p.Close()
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// jetStreamRow measures the store on p with n replicas, then the floor on
// the same stream.
func jetStreamRow(ctx context.Context, p *natstest.Procs, n, appenders, events int) (throughputRow, error) {
	url := fmt.Sprintf("nats://%s/bench?replicas=%d&sync=always", p.Hosts(), n)
	var st *jetstream.Store
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if st, err = jetstream.OpenURL(ctx, url); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return throughputRow{}, fmt.Errorf("R%d: %w", n, err)
		}
	}
	defer st.Close()
	res, id, err := appendRun(ctx, fmt.Sprintf("JetStream R%d", n), st, appenders, events)
	if err != nil {
		return throughputRow{}, err
	}
	nc, err := nats.Connect(p.URLs())
	if err != nil {
		return throughputRow{}, err
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		return throughputRow{}, err
	}
	fl, err := floor(ctx, js, st.Stream(), st.Subject(id), st.Subject("FLOOR"))
	if err != nil {
		return throughputRow{}, fmt.Errorf("R%d floor: %w", n, err)
	}
	res.msgs = fl.msgs
	return throughputRow{store: res, floor: &fl}, nil
}

// appendRun has appenders goroutines append and flush one event at a time
// on one new session of st, events in all.
func appendRun(ctx context.Context, name string, st handle.Store, appenders, events int) (runResult, string, error) {
	h, err := st.Create(ctx)
	if err != nil {
		return runResult{}, "", err
	}
	defer h.Close()
	var mu sync.Mutex
	var firstErr error
	lat := make([]time.Duration, 0, events)
	per := events / appenders
	start := time.Now()
	var wg sync.WaitGroup
	for range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, per)
			for range per {
				t := time.Now()
				_, err := h.Append(ctx, event)
				if err == nil {
					err = h.Flush(ctx)
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res := runResult{name: name, events: per * appenders, dur: time.Since(start), latency: lat}
	if firstErr != nil {
		return res, "", fmt.Errorf("%s: %w", name, firstErr)
	}
	return res, h.ID(), nil
}

// floor reads back the messages the store published on subj and
// publishes them again on dst, one after the other, each with the headers
// the store gave it (Sl-Off, Sl-Seq, Sl-Flush and the expected last seq,
// chained to dst's own) and each waiting for its acknowledgement: what
// any JetStream store pays for the same batches. The header message goes
// first, untimed, as Create's did.
func floor(ctx context.Context, js natsjs.JetStream, stream, subj, dst string) (runResult, error) {
	cons, err := js.OrderedConsumer(ctx, stream, natsjs.OrderedConsumerConfig{FilterSubjects: []string{subj}})
	if err != nil {
		return runResult{}, err
	}
	var msgs []natsjs.Msg
	for {
		batch, err := cons.FetchNoWait(1000)
		if err != nil {
			return runResult{}, err
		}
		n := 0
		pending := uint64(1)
		for m := range batch.Messages() {
			msgs = append(msgs, m)
			n++
			if md, err := m.Metadata(); err == nil {
				pending = md.NumPending
			}
		}
		if batch.Error() != nil {
			return runResult{}, batch.Error()
		}
		if n == 0 || pending == 0 {
			break
		}
	}
	if len(msgs) < 2 {
		return runResult{}, fmt.Errorf("%s holds %d messages", subj, len(msgs))
	}
	res := runResult{name: "floor"}
	last := uint64(0)
	var start time.Time
	for i, m := range msgs {
		nm := &nats.Msg{Subject: dst, Data: m.Data(), Header: nats.Header{}}
		for _, k := range []string{"Sl-Off", "Sl-Seq", "Sl-Flush"} {
			if v := m.Headers().Get(k); v != "" {
				nm.Header.Set(k, v)
			}
		}
		nm.Header.Set(natsjs.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
		t := time.Now()
		if i == 1 {
			start = t
		}
		ack, err := js.PublishMsg(ctx, nm)
		if err != nil {
			return runResult{}, err
		}
		last = ack.Sequence
		if i == 0 {
			continue // the header
		}
		res.latency = append(res.latency, time.Since(t))
		res.events += bytes.Count(m.Data(), []byte("\n"))
		res.msgs++
	}
	res.dur = time.Since(start)
	return res, nil
}

func printThroughput(w io.Writer, appenders int, rows []throughputRow) {
	fmt.Fprintf(w, "\n%d appenders on one session, Append + Flush of one event each (~150-byte rows); servers with sync_interval: always\n\n", appenders)
	fmt.Fprintln(w, "| | events/s | p50 Flush | p99 Flush | publishes (events each) | floor: events/s | floor p50 / p99 publish | store ÷ floor |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		s := r.store
		if r.floor == nil {
			fmt.Fprintf(w, "| %s | %s | %s | %s | | | | |\n", s.name, count(s.rate()), ms(s.pct(0.5)), ms(s.pct(0.99)))
			continue
		}
		f := *r.floor
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s (%.1f) | %s | %s / %s | %.2f |\n", s.name, count(s.rate()), ms(s.pct(0.5)), ms(s.pct(0.99)),
			count(float64(s.msgs)), float64(f.events)/float64(max(f.msgs, 1)), count(f.rate()), ms(f.pct(0.5)), ms(f.pct(0.99)), s.rate()/f.rate())
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// count prints n with thousands separators.
func count(n float64) string {
	s := strconv.FormatInt(int64(n+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
