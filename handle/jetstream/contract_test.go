package jetstream

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/storetest"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// stored is a session's messages as the server holds them.
type stored struct {
	msgs []*natsjs.RawStreamMsg
	log  []byte // the payloads, concatenated: the raw log
}

func load(t *testing.T, st *Store, id string) stored {
	t.Helper()
	var s stored
	tail, err := st.lastMsg(context.Background(), st.Subject(id))
	require.NoError(t, err)
	for m, err := range st.messages(context.Background(), st.Subject(id), 1, tail.Sequence) {
		require.NoError(t, err)
		s.msgs = append(s.msgs, m)
		s.log = append(s.log, m.Data...)
	}
	return s
}

// rewrite replaces a session's messages by log cut at the same message
// boundaries (a shorter log drops or shortens the last ones), as damage
// on the server's disk would leave them.
func rewrite(t *testing.T, st *Store, id string, s stored, log []byte) {
	t.Helper()
	var msgs []*nats.Msg
	off := 0
	for _, m := range s.msgs {
		end := min(off+len(m.Data), len(log))
		if end > off {
			nm := &nats.Msg{Subject: m.Subject, Data: bytes.Clone(log[off:end]), Header: nats.Header{}}
			for _, k := range []string{hdrOff, hdrSeq} {
				if v := m.Header.Get(k); v != "" {
					nm.Header.Set(k, v)
				}
			}
			msgs = append(msgs, nm)
		}
		off += len(m.Data)
	}
	require.NoError(t, st.replace(context.Background(), st.Subject(id), s.msgs[len(s.msgs)-1].Sequence, msgs))
}

var harnessN atomic.Int64

// jsHarness is the contract-suite harness of a Store on its own prefix of
// js; admin, a second store on the same prefix, damages what is stored.
func jsHarness(t *testing.T, js natsjs.JetStream, opts ...Option) storetest.Harness {
	prefix := WithPrefix(fmt.Sprintf("t%d", harnessN.Add(1)))
	st := newStore(t, js, append(opts, prefix)...)
	admin := newStore(t, js, prefix)
	return storetest.Harness{
		Store: st,
		Corrupt: func(t *testing.T, id string, seq int64) (int64, int64) {
			s := load(t, admin, id)
			b := bytes.Clone(s.log)
			off := int64(bytes.IndexByte(b, '\n') + 1) // past the header
			for off < int64(len(b)) {
				end := off + int64(bytes.IndexByte(b[off:], '\n'))
				evs, err := eventlog.DecodeRow(b[off:end])
				require.NoError(t, err)
				if evs[0].Seq <= seq && seq <= evs[len(evs)-1].Seq {
					b[off] = '#'
					rewrite(t, admin, id, s, b)
					return off, evs[0].Seq
				}
				off = end + 1
			}
			t.Fatalf("seq %d not found in %s", seq, id)
			return 0, 0
		},
		Tear: func(t *testing.T, id string, n int64) {
			s := load(t, admin, id)
			rewrite(t, admin, id, s, s.log[:int64(len(s.log))-n])
		},
		Size: func(t *testing.T, id string) int64 {
			return int64(len(load(t, admin, id).log))
		},
		BytesRead:      st.read.Load,
		AppendAllLimit: int64(st.cfg.maxBatch*st.maxMsg) / 2,
		ReadUnit:       int64(st.maxMsg),
		Lose: func(t *testing.T, id string) {
			require.NoError(t, admin.stream.Purge(context.Background(), natsjs.WithPurgeSubject(admin.Subject(id))))
		},
		Sealing: func(t *testing.T, rs []age.Recipient, ids []age.Identity) handle.Store {
			return newStore(t, js, append(opts, prefix, With(handle.WithRecipients(rs...)), With(handle.WithIdentities(ids...)))...)
		},
		Raw: func(t *testing.T, id string) []byte { return load(t, admin, id).log },
		WithPolicy: func(t *testing.T, p handle.FlushPolicy, ticks chan time.Time) handle.Store {
			return newStore(t, js, append(opts, prefix, With(handle.WithFlushPolicy(p)), func(c *config) {
				c.ticker = func(d time.Duration) (<-chan time.Time, func()) {
					if d == c.leaseTTL/3 {
						return nil, func() {} // no renewals: the ticks are the flusher's
					}
					return ticks, func() {}
				}
			})...)
		},
	}
}

// TestContract runs the store contract in two configurations: by default
// each case in one of them (alternating), every case in both under
// SESSIONLOG_SWEEPS=full.
func TestContract(t *testing.T) {
	s := runServer(t)
	js := connect(t, s)
	configs := []struct {
		name string
		opts []Option
	}{
		{"leases", nil},
		// Small messages: flushes span several messages and batches.
		{"small messages", []Option{WithMaxMessageBytes(2000), WithMaxBatch(16)}},
	}
	for i, tc := range configs {
		part, parts := i, len(configs)
		if sweep.Full() {
			part, parts = 0, 1
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // one server, a prefix a harness
			storetest.RunPart(t, part, parts, func(t *testing.T) storetest.Harness { return jsHarness(t, js, tc.opts...) })
		})
	}
}
