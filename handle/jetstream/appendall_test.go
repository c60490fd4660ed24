package jetstream

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/storetest"
)

// A writer killed in the middle of AppendAll's atomic batch — its messages
// sent, the commit not — leaves nothing of the batch: the server stages a
// batch apart from the stream until its commit and abandons it when the
// commit does not come. The retry then succeeds.
func TestAppendAllKilledMidBatch(t *testing.T) {
	s := runServer(t)
	st := newStore(t, connect(t, s), WithMaxMessageBytes(300))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	var old []eventlog.Event
	for i := range 3 {
		old = append(old, ev(0, i))
	}
	_, err = h.Append(ctx, old...)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	id, subj := h.ID(), st.Subject(h.ID())
	before := load(t, st, id)

	var batch []eventlog.Event
	for i := range 40 {
		e := ev(1, i)
		e.Seq = int64(3 + i)
		batch = append(batch, e)
	}
	// The messages AppendAll publishes, on a connection of their own.
	msgs := st.split(subj, st.enc.AppendRows(nil, batch), int64(len(before.log)), nil)
	require.Greater(t, len(msgs), 4, "a batch of many messages")
	msgs[0].Header.Set(natsjs.ExpectedLastSubjSeqHeader, strconv.FormatUint(before.msgs[len(before.msgs)-1].Sequence, 10))
	nc, err := nats.Connect("", nats.InProcessServer(s))
	require.NoError(t, err)
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	bp, err := jetstreamext.NewBatchPublisher(js)
	require.NoError(t, err)
	for _, m := range msgs[:len(msgs)-1] {
		require.NoError(t, bp.AddMsg(m))
	}
	require.NoError(t, nc.FlushTimeout(time.Second))
	nc.Close() // killed before its commit

	after := load(t, st, id)
	require.Equal(t, before.log, after.log, "nothing of the batch is in the stream")
	r, err := st.Open(ctx, id, handle.ReadOnly)
	require.NoError(t, err)
	require.Len(t, readAll(t, r), 3)
	require.NoError(t, r.Close())

	info, err := st.AppendAll(ctx, id, 3, storetest.Events(batch, nil))
	require.NoError(t, err, "the retry succeeds")
	require.Equal(t, int64(43), info.Events)
}

// A publish that fails for good in the middle of AppendAll stores nothing
// and poisons nothing of the store: the session is as it was, and takes
// the batch after.
func TestAppendAllPublishFails(t *testing.T) {
	st := newStore(t, connect(t, runServer(t)), WithMaxMessageBytes(300))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, ev(0, 0))
	require.NoError(t, err)
	require.NoError(t, h.Close())
	var batch []eventlog.Event
	for i := range 20 {
		e := ev(1, i)
		e.Seq = int64(1 + i)
		batch = append(batch, e)
	}
	refused := &natsjs.APIError{Code: 400, ErrorCode: 10099, Description: "refused"}
	st.pubOnce = func(context.Context, []*nats.Msg) (uint64, error) { return 0, refused }
	_, err = st.AppendAll(ctx, h.ID(), 1, storetest.Events(batch, nil))
	require.ErrorIs(t, err, refused)
	st.pubOnce = st.publishOnce
	r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	require.Len(t, readAll(t, r), 1, "nothing of the batch stored")
	require.NoError(t, r.Close())
	info, err := st.AppendAll(ctx, h.ID(), 1, storetest.Events(batch, nil))
	require.NoError(t, err)
	require.Equal(t, int64(21), info.Events)
}
