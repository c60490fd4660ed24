package checkpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/countfs"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

var ctx = context.Background()

func ev(i int) eventlog.Event {
	return eventlog.Event{Type: "tool/result", Time: int64(i), Data: json.RawMessage(fmt.Sprintf(`{"i":%d,"output":"line %d of some tool output"}`, i, i))}
}

func appendN(t *testing.T, h handle.Handle, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		_, err := h.Append(ctx, ev(i))
		require.NoError(t, err)
	}
	require.NoError(t, h.Flush(ctx))
}

// A checkpoint's written digest equals the digest verify recomputes, for
// both encodings, across reopens (the running digest resumes).
func TestWrittenDigestEqualsRecomputed(t *testing.T) {
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			store := file.New(afero.NewMemMapFs(), "/s", handle.WithEncoding(enc))
			h, err := store.Create(ctx)
			require.NoError(t, err)
			appendN(t, h, 0, 30)
			cp1, err := checkpoint.Create(ctx, h, checkpoint.WithLabel("a"))
			require.NoError(t, err)
			require.Equal(t, int64(30), cp1.Seq)
			appendN(t, h, 30, 5)
			require.NoError(t, h.Close())

			for round := range 3 {
				w, err := store.Open(ctx, h.ID(), handle.ReadWrite)
				require.NoError(t, err)
				appendN(t, w, 100+round*10, 7)
				_, err = checkpoint.Create(ctx, w, checkpoint.WithLabel(fmt.Sprint("r", round)))
				require.NoError(t, err)
				require.NoError(t, w.Close())
			}
			r, err := store.Open(ctx, h.ID(), handle.ReadOnly)
			require.NoError(t, err)
			defer r.Close()
			res, err := checkpoint.Verify(ctx, r)
			require.NoError(t, err)
			require.Equal(t, 4, res.Checkpoints)
			require.Equal(t, 4, res.Verified)
		})
	}
}

// Reopening a writer continues the running digest from its saved state: the
// first checkpoint after a reopen reads a bounded part of the log, not all
// of it. Without the saved state, one pass rebuilds it.
func TestDigestResumesWithoutRehash(t *testing.T) {
	base := afero.NewMemMapFs()
	counted := countfs.New(base)
	store := file.New(counted, "/s")
	h, err := store.Create(ctx)
	require.NoError(t, err)
	for i := 0; i < 20000; i += 1000 {
		appendN(t, h, i, 1000)
	}
	_, err = checkpoint.Create(ctx, h)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	info, err := store.Stat(ctx, h.ID())
	require.NoError(t, err)

	w, err := store.Open(ctx, h.ID(), handle.ReadWrite)
	require.NoError(t, err)
	appendN(t, w, 20000, 10)
	before := counted.BytesRead()
	_, err = checkpoint.Create(ctx, w)
	require.NoError(t, err)
	require.Less(t, counted.BytesRead()-before, info.SizeBytes/2, "the digest resumed from its saved state")
	require.NoError(t, w.Close())

	// Saved states that do not match the log are ignored: the one Close
	// saved, and those kept at checkpoints.
	matches, err := afero.Glob(base, "/s/.cache/*.digest*")
	require.NoError(t, err)
	require.Len(t, matches, 2)
	for _, m := range matches {
		require.NoError(t, afero.WriteFile(base, m, []byte(`{"next":5,"last":"00","state":"AAAA"}`), 0o600))
	}
	w, err = store.Open(ctx, h.ID(), handle.ReadWrite)
	require.NoError(t, err)
	before = counted.BytesRead()
	_, err = checkpoint.Create(ctx, w)
	require.NoError(t, err)
	require.Greater(t, counted.BytesRead()-before, info.SizeBytes/2, "one pass rebuilt it")
	require.NoError(t, w.Close())
	r, err := store.Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	res, err := checkpoint.Verify(ctx, r)
	require.NoError(t, err)
	require.Equal(t, 3, res.Verified)
}

// Reserved types appended through a plain Append are validated.
func TestReservedTypesValidatedOnAppend(t *testing.T) {
	store := file.New(afero.NewMemMapFs(), "/s")
	h, err := store.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	appendN(t, h, 0, 3)
	digest, next, err := h.LogDigest(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), next)
	zero := "sha256:" + fmt.Sprintf("%064d", 0)
	for _, tc := range []struct {
		name string
		e    eventlog.Event
	}{
		{"checkpoint with a wrong digest", eventlog.Event{Type: "checkpoint", Data: json.RawMessage(`{"log":"` + zero + `"}`)}},
		{"checkpoint without a digest", eventlog.Event{Type: "checkpoint", Data: json.RawMessage(`{}`)}},
		{"checkpoint digest malformed", eventlog.Event{Type: "checkpoint", Data: json.RawMessage(`{"log":"md5:00"}`)}},
		{"rollback to its own seq", eventlog.Event{Type: "rollback", Data: json.RawMessage(`{"to":4}`)}},
		{"rollback forward", eventlog.Event{Type: "rollback", Data: json.RawMessage(`{"to":9}`)}},
		{"rollback negative", eventlog.Event{Type: "rollback", Data: json.RawMessage(`{"to":-1}`)}},
		{"rollback without to", eventlog.Event{Type: "rollback", Data: json.RawMessage(`{}`)}},
		{"rollback to a float", eventlog.Event{Type: "rollback", Data: json.RawMessage(`{"to":1.5}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Append(ctx, ev(3), tc.e)
			require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
			require.Equal(t, int64(2), h.Seq(), "nothing of the batch was queued")
		})
	}
	// The right digest, in the same batch as the events before it.
	d := eventlog.NewDigest()
	for e, err := range h.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		d.Add(e)
	}
	require.Equal(t, digest, d.String())
	e3 := ev(3)
	e3.Seq = 3
	d.Add(e3)
	_, err = h.Append(ctx, ev(3), eventlog.Event{Type: "checkpoint", Data: json.RawMessage(`{"log":"` + d.String() + `"}`)},
		eventlog.Event{Type: "rollback", Data: json.RawMessage(`{"to":0}`)})
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	res, err := checkpoint.Verify(ctx, h)
	require.NoError(t, err)
	require.Equal(t, 1, res.Verified)
}

// A one-character change inside a covered event's data is caught.
func TestVerifyCatchesOneCharacter(t *testing.T) {
	fsys := afero.NewMemMapFs()
	store := file.New(fsys, "/s")
	h, err := store.Create(ctx)
	require.NoError(t, err)
	appendN(t, h, 0, 10)
	_, err = checkpoint.Create(ctx, h)
	require.NoError(t, err)
	appendN(t, h, 10, 3)
	require.NoError(t, h.Close())

	b, err := afero.ReadFile(fsys, h.Path())
	require.NoError(t, err)
	i := bytes.Index(b, []byte("line 4 of"))
	require.Positive(t, i)
	b[i+5] = '5'
	require.NoError(t, afero.WriteFile(fsys, h.Path(), b, 0o600))

	r, err := store.Open(ctx, h.ID(), handle.ReadOnly) // opening does not look at digests
	require.NoError(t, err)
	defer r.Close()
	_, err = checkpoint.Verify(ctx, r)
	var de *replay.DigestError
	require.ErrorAs(t, err, &de)
	require.Equal(t, int64(10), de.Seq)
}

// List marks which checkpoints are on the live branch; RollbackTo finds the
// latest live one with the label.
func TestListLiveAndRollbackTo(t *testing.T) {
	store := file.New(afero.NewMemMapFs(), "/s")
	h, err := store.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	appendN(t, h, 0, 2)                                            // 0 1
	a, err := checkpoint.Create(ctx, h, checkpoint.WithLabel("a")) // 2
	require.NoError(t, err)
	appendN(t, h, 2, 2)                                            // 3 4
	b, err := checkpoint.Create(ctx, h, checkpoint.WithLabel("b")) // 5
	require.NoError(t, err)
	appendN(t, h, 4, 1)                                                                // 6
	seq, err := checkpoint.RollbackTo(ctx, h, "a", checkpoint.WithReason("try again")) // 7: back to 2
	require.NoError(t, err)
	require.Equal(t, int64(7), seq)
	appendN(t, h, 5, 1)                                             // 8
	b2, err := checkpoint.Create(ctx, h, checkpoint.WithLabel("b")) // 9
	require.NoError(t, err)

	infos, err := checkpoint.List(ctx, h)
	require.NoError(t, err)
	require.Len(t, infos, 3)
	require.Equal(t, []bool{true, false, true}, []bool{infos[0].Live, infos[1].Live, infos[2].Live})
	require.Equal(t, []int64{a.Seq, b.Seq, b2.Seq}, []int64{infos[0].Seq, infos[1].Seq, infos[2].Seq})

	found, err := checkpoint.Find(ctx, h, "b")
	require.NoError(t, err)
	require.Equal(t, b2.Seq, found.Seq)
	last, ok, err := checkpoint.Last(ctx, h)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, b2.Seq, last.Seq)

	// Back into the abandoned branch: b (seq 5) is live again.
	_, err = checkpoint.Rollback(ctx, h, 5) // 10
	require.NoError(t, err)
	infos, err = checkpoint.List(ctx, h)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, false}, []bool{infos[0].Live, infos[1].Live, infos[2].Live})

	_, err = checkpoint.RollbackTo(ctx, h, "nope")
	require.ErrorIs(t, err, checkpoint.ErrNoCheckpoint)
}

// A checkpoint with a state digest: verify checks it for a projection it
// has, and reports it unchecked otherwise.
func TestStateDigest(t *testing.T) {
	store := file.New(afero.NewOsFs(), filepath.Join(t.TempDir(), "s"))
	h, err := store.Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	appendN(t, h, 0, 4)
	p := &count{}
	for e, err := range h.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		p.Apply(e)
	}
	cp, err := checkpoint.Create(ctx, h, checkpoint.WithState(p))
	require.NoError(t, err)
	require.Equal(t, "count/v1", cp.State.Projection)
	res, err := checkpoint.Verify(ctx, h, &count{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Verified)
	res, err = checkpoint.Verify(ctx, h)
	require.NoError(t, err)
	require.Equal(t, 1, res.Unchecked)
}

// count is a small projection: how many events it saw.
type count struct{ N int }

func (c *count) Name() string                  { return "count" }
func (c *count) Version() int                  { return 1 }
func (c *count) Apply(eventlog.Event)          { c.N++ }
func (c *count) Reset()                        { c.N = 0 }
func (c *count) MarshalState() ([]byte, error) { return json.Marshal(c.N) }
func (c *count) UnmarshalState(b []byte) error { return json.Unmarshal(b, &c.N) }

var _ projection.Projection = (*count)(nil)

// counting is a projection that counts the events applied to it.
type counting struct {
	projection.Projection
	applied *int
}

func (c counting) Apply(e eventlog.Event) { *c.applied++; c.Projection.Apply(e) }

// Verify replays only the projections some checkpoint names: a log whose
// checkpoints carry agent/v1 states never pays for a transcript replay
// (before, verify of a 1 GB session replayed its transcript: 26 s, 1.3 GiB).
func TestVerifyReplaysOnlyNamedProjections(t *testing.T) {
	for _, tc := range []struct {
		name       string
		state      func() projection.Projection // the checkpoint's, nil: none
		transcript bool                         // the transcript is replayed
		verified   int
	}{
		{"log digest only", nil, false, 1},
		{"agent state", func() projection.Projection { return projection.NewAgent() }, false, 1},
		{"transcript state", func() projection.Projection { return projection.NewTranscript() }, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := file.New(afero.NewMemMapFs(), "/s").Create(ctx)
			require.NoError(t, err)
			defer h.Close()
			appendN(t, h, 0, 20)
			var opts []checkpoint.Option
			if tc.state != nil {
				p := tc.state()
				_, err := replay.Replay(ctx, h, []projection.Projection{p})
				require.NoError(t, err)
				opts = append(opts, checkpoint.WithState(p))
			}
			_, err = checkpoint.Create(ctx, h, opts...)
			require.NoError(t, err)
			appendN(t, h, 20, 5)

			var agentN, transcriptN int
			res, err := checkpoint.Verify(ctx, h,
				counting{projection.NewAgent(), &agentN}, counting{projection.NewTranscript(), &transcriptN})
			require.NoError(t, err)
			require.Equal(t, tc.verified, res.Verified)
			require.Zero(t, res.Unchecked)
			require.Equal(t, tc.transcript, transcriptN > 0, "transcript applied %d events", transcriptN)
			require.Equal(t, tc.state != nil && !tc.transcript, agentN > 0, "agent applied %d events", agentN)
		})
	}
}

// At writes the checkpoint at the expected seq or not at all: when another
// appender got in after the caller took its state, nothing is written and
// the error is a *handle.ConflictError.
func TestCreateAt(t *testing.T) {
	h, err := file.New(afero.NewMemMapFs(), "/s").Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	appendN(t, h, 0, 3)
	next := h.Seq() + 1
	appendN(t, h, 3, 1) // another appender got in
	_, err = checkpoint.Create(ctx, h, checkpoint.At(next))
	var ce *handle.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, next, ce.Expected)
	require.Equal(t, next+1, ce.Next)
	require.Equal(t, next, h.Seq(), "nothing written")
	info, err := checkpoint.Create(ctx, h, checkpoint.At(next+1))
	require.NoError(t, err)
	require.Equal(t, next+1, info.Seq)
}
