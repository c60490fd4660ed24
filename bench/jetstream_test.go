package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/loadgen"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

// The JetStream store beside the file store (issue 12; docs/distributed.md):
//
//   - file: file.Store on the OS file system (fsync per flush);
//   - js-1node: one embedded nats-server with sync_interval: always,
//     in-process connection;
//   - js-r3: three embedded nats-servers routed on loopback, an R3 stream
//     (default sync interval: the quorum makes a write durable), TCP
//     connection to one node.
//
//	go test -run '^$' -bench 'BenchmarkJetStream' -benchtime 2000x .

// stores yields the three stores, each fresh.
func stores(b *testing.B, run func(b *testing.B, st handle.Store)) {
	b.Run("file", func(b *testing.B) {
		run(b, file.New(afero.NewOsFs(), filepath.Join(b.TempDir(), "s")))
	})
	b.Run("js-1node", func(b *testing.B) {
		js := natstest.Connect(b, natstest.Run(b))
		st, err := jetstream.New(context.Background(), js, jetstream.WithSyncAlways())
		if err != nil {
			b.Fatal(err)
		}
		run(b, st)
	})
	b.Run("js-r3", func(b *testing.B) {
		c := natstest.RunCluster(b)
		nc, err := nats.Connect(c.URLs())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		js, err := natsjs.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		var st *jetstream.Store
		natstest.Eventually(b, "the cluster to accept an R3 stream", func() bool {
			st, err = jetstream.New(context.Background(), js, jetstream.WithReplicas(3), jetstream.WithStrictDurability())
			return err == nil
		})
		run(b, st)
	})
}

var chunkData = json.RawMessage(`{"text":"a streamed delta of about one hundred bytes, as an assistant chunk would carry it...."}`)

// BenchmarkJetStreamAppend is durable append: 1, 8 and 64 appenders on
// one session, each Append+Flush one event and waiting for it (group
// commit shares publishes as it shares fsyncs). One op is one event.
func BenchmarkJetStreamAppend(b *testing.B) {
	stores(b, func(b *testing.B, st handle.Store) {
		for _, appenders := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
				ctx := context.Background()
				h, err := st.Create(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
				b.ResetTimer()
				err = loadgen.AppendFlush(ctx, h, int64(b.N), appenders, eventlog.Event{Type: "tool/call", Time: 1764450000000, Data: chunkData})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	})
}

// readSession is a session of 20,000 events of ~200 bytes flushed 50 at
// a time (about 4 MB), closed.
func readSession(b *testing.B, st handle.Store) (id string, size int64) {
	ctx := context.Background()
	h, err := st.Create(ctx)
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]eventlog.Event, 50)
	for i := 0; i < 20000; i += len(evs) {
		for k := range evs {
			evs[k] = eventlog.Event{Type: "tool/result", Time: int64(1764450000000 + i + k),
				Data: json.RawMessage(fmt.Sprintf(`{"i":%d,"output":"%0180d"}`, i+k, i+k))}
		}
		if _, err := h.Append(ctx, evs...); err != nil {
			b.Fatal(err)
		}
		if err := h.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
	info, err := st.Stat(ctx, h.ID())
	if err != nil {
		b.Fatal(err)
	}
	return h.ID(), info.SizeBytes
}

// BenchmarkJetStreamRead opens a session read-only (which checks every
// row) and reads it all. MB/s counts the log's bytes.
func BenchmarkJetStreamRead(b *testing.B) {
	stores(b, func(b *testing.B, st handle.Store) {
		id, size := readSession(b, st)
		ctx := context.Background()
		b.SetBytes(size)
		b.ResetTimer()
		for range b.N {
			r, err := st.Open(ctx, id, handle.ReadOnly)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, err := range r.Read(ctx, 0, handle.End) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			r.Close()
			if n != 20000 {
				b.Fatalf("read %d events", n)
			}
		}
	})
}

// BenchmarkJetStreamStat is Stat of that session: header and last event
// without reading the log.
func BenchmarkJetStreamStat(b *testing.B) {
	stores(b, func(b *testing.B, st handle.Store) {
		id, _ := readSession(b, st)
		ctx := context.Background()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if _, err := st.Stat(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/stat")
	})
}
