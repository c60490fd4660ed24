package jetstream

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/storetest"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// A sealed session's subject holds the raw sealed layout (docs/format.md
// §11): its payloads concatenate to a sealed file whose framing checks,
// the first message holds the head and the sealed header row, and every
// message with Sl-Seq starts with the record of the row holding that seq.
// A row larger than a message is cut inside its record: Stat walks back
// to the message it starts in, and a read from its seq or the next finds
// it.
func TestSealedLayout(t *testing.T) {
	alice, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	js := connect(t, runServer(t))
	st := newStore(t, js, WithMaxMessageBytes(2000), WithMaxBatch(64), With(handle.WithRecipients(alice.Recipient())))
	big := func(i int) eventlog.Event {
		return eventlog.Event{Type: "tool/result", Time: int64(i), Data: json.RawMessage(`{"output":"` + strings.Repeat("y", 6000) + `"}`)}
	}
	var evs []eventlog.Event
	for i := range 30 {
		e := ev(0, i)
		if i == 12 || i == 29 {
			e = big(i)
		}
		e.Seq = int64(i)
		evs = append(evs, e)
	}
	h, err := st.Create(ctx)
	require.NoError(t, err)
	for i := 0; i < len(evs); i += 5 {
		_, err := h.Append(ctx, evs[i:i+5]...)
		require.NoError(t, err)
		require.NoError(t, h.Flush(ctx))
	}
	require.NoError(t, h.Close())
	id := h.ID()

	info, err := st.Stat(ctx, id)
	require.NoError(t, err)
	require.True(t, info.Sealed)
	require.Equal(t, int64(29), info.LastSeq)
	require.Equal(t, "tool/result", info.LastType, "the last row spans messages")
	require.Equal(t, int64(29), info.LastTime)

	reader := newStore(t, js, With(handle.WithIdentities(alice)))
	r, err := reader.Open(ctx, id, handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	for _, from := range []int64{0, 11, 12, 13, 29} {
		var got []eventlog.Event
		for e, err := range r.Read(ctx, from, handle.End) {
			require.NoError(t, err)
			got = append(got, e)
		}
		require.Len(t, got, 30-int(from), "from %d", from)
		require.Equal(t, string(eventlog.AppendCanon(nil, evs[from])), string(eventlog.AppendCanon(nil, got[0])), "from %d", from)
	}

	s := load(t, st, id)
	fr, err := seal.Check(bytes.NewReader(s.log), seal.Raw, id)
	require.NoError(t, err)
	require.Nil(t, fr.Torn)
	require.Equal(t, 31, fr.Records, "the header row and one record a row")
	head, sealed, err := seal.ReadHead(bytes.NewReader(s.msgs[0].Data), int64(len(s.msgs[0].Data)), id)
	require.NoError(t, err)
	require.True(t, sealed)
	require.Less(t, head.End, int64(len(s.msgs[0].Data)), "the sealed header row is in the first message")
	kr := seal.NewKeyring(id, alice)
	for _, e := range head.Envelopes {
		kr.Add(e)
	}
	starts := 0
	for _, m := range s.msgs[1:] {
		seq, ok := msgSeq(m.Header)
		if !ok {
			continue
		}
		starts++
		off, _ := msgOffset(m.Header)
		sr := seal.NewReader(bytes.NewReader(s.log[off:]), seal.Raw, kr, seal.WithStart(off, seq))
		require.True(t, sr.Next(), "message at %d: %v", off, sr.Err())
		require.Equal(t, seq, sr.Event().Seq)
	}
	require.Greater(t, starts, 5)
	require.Greater(t, len(s.msgs), 8, "the big rows span messages")
}

// SealingOf and Config.SealAs: a copy of a sealed session (transfer.Copy) is
// sealed with the same key records, read with the same identities; an
// envelope is bound to its session, so a copy under another ID is
// refused, and a clear session has no sealing.
func TestSealAs(t *testing.T) {
	alice, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	js := connect(t, runServer(t))
	src := newStore(t, js, With(handle.WithRecipients(alice.Recipient())))
	h, err := src.Create(ctx)
	require.NoError(t, err)
	evs := []eventlog.Event{ev(0, 0), ev(0, 1), ev(0, 2)}
	_, err = h.Append(ctx, evs...)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	sl, err := src.SealingOf(ctx, h.ID())
	require.NoError(t, err)
	require.NotNil(t, sl)

	dst := newStore(t, js, WithPrefix("copy"))
	for i := range evs {
		evs[i].Seq = int64(i)
	}
	info, err := dst.CreateFrom(ctx, storetest.Events(evs, nil), handle.WithID(h.ID()), func(c *handle.Config) { c.SealAs = sl })
	require.NoError(t, err)
	require.True(t, info.Sealed)
	srcHead, _, err := seal.ReadHead(bytes.NewReader(load(t, src, h.ID()).msgs[0].Data), 1<<20, h.ID())
	require.NoError(t, err)
	dstMsg := load(t, dst, h.ID()).msgs[0].Data
	dstHead, _, err := seal.ReadHead(bytes.NewReader(dstMsg), int64(len(dstMsg)), h.ID())
	require.NoError(t, err)
	require.Equal(t, srcHead.Fingerprint(), dstHead.Fingerprint(), "the same key records")
	r, err := newStore(t, js, WithPrefix("copy"), With(handle.WithIdentities(alice))).Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	require.Len(t, readAll(t, r), 3)
	require.NoError(t, r.Close())

	_, err = dst.CreateFrom(ctx, storetest.Events(evs, nil), func(c *handle.Config) { c.SealAs = sl })
	require.ErrorContains(t, err, "bound to its session")

	c, err := dst.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	none, err := dst.SealingOf(ctx, c.ID())
	require.NoError(t, err)
	require.Nil(t, none, "a clear session")
}

// The JetStream store's redaction option (the rest of redaction at write
// is the contract's, storetest "RedactionAtWrite"): by default no message
// of the stream holds the secret; handle.Unredacted stores it as given.
func TestRedactionAtWrite(t *testing.T) {
	secret := "AKIA" + strings.Repeat("Q7", 8) // an AWS access key ID, built at run time
	s := runServer(t)
	for _, c := range []struct {
		name  string
		store []Option
		clear bool
	}{
		{"default", nil, false},
		{"store off", []Option{With(handle.Unredacted())}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t, connect(t, s), c.store...)
			h, err := st.Create(ctx)
			require.NoError(t, err)
			_, err = h.Append(ctx, eventlog.Event{Type: "tool/result", Time: 1, Data: json.RawMessage(`{"output":"key ` + secret + ` end"}`)})
			require.NoError(t, err)
			require.NoError(t, h.Close())
			r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
			require.NoError(t, err)
			defer r.Close()
			got := readAll(t, r)
			require.Len(t, got, 1)
			require.Equal(t, c.clear, strings.Contains(string(got[0].Data), secret), "the secret in the event")
			require.Equal(t, c.clear, strings.Contains(string(load(t, st, h.ID()).log), secret), "the secret in a message")
		})
	}
}

// AddRecipients and RotateKey on JetStream (docs/format.md §11, "Keys"):
// a recipient added reads the whole log (its envelope stands after the
// rows it opens), a key rotated to seals the rows after it and Stat
// finds its envelope among the rows; both wait for the writer's lease,
// and refuse a clear session.
func TestSealedKeys(t *testing.T) {
	alice, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	bob, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	js := connect(t, runServer(t))
	st := newStore(t, js, With(handle.WithRecipients(alice.Recipient())))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, ev(0, 0), ev(0, 1), ev(0, 2))
	require.NoError(t, err)
	require.NoError(t, h.Flush(ctx))
	id := h.ID()
	require.ErrorIs(t, st.AddRecipients(ctx, id, bob.Recipient()), handle.ErrLocked, "under the writer's lease")
	require.NoError(t, h.Close())

	bobs := newStore(t, js, With(handle.WithIdentities(bob)))
	_, err = bobs.Open(ctx, id, handle.ReadOnly)
	require.ErrorIs(t, err, seal.ErrNoKey)
	require.NoError(t, st.AddRecipients(ctx, id, bob.Recipient()))
	r, err := bobs.Open(ctx, id, handle.ReadOnly)
	require.NoError(t, err, "the new recipient reads the whole log")
	require.Len(t, readAll(t, r), 3)
	require.NoError(t, r.Close())

	require.NoError(t, st.RotateKey(ctx, id, alice.Recipient()))
	w, err := st.Open(ctx, id, handle.ReadWrite)
	require.NoError(t, err)
	_, err = w.Append(ctx, ev(0, 3), ev(0, 4))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	alices := newStore(t, js, With(handle.WithIdentities(alice)))
	info, err := alices.Stat(ctx, id)
	require.NoError(t, err, "the rotated key's envelope is found among the rows")
	require.Equal(t, int64(4), info.LastSeq)
	r, err = alices.Open(ctx, id, handle.ReadOnly)
	require.NoError(t, err)
	require.Len(t, readAll(t, r), 5)
	require.NoError(t, r.Close())
	_, err = newStore(t, js, With(handle.WithIdentities(bob))).Open(ctx, id, handle.ReadOnly)
	require.ErrorIs(t, err, seal.ErrNoKey, "bob has no envelope of the rotated key")

	fr, err := seal.Check(bytes.NewReader(load(t, st, id).log), seal.Raw, id)
	require.NoError(t, err)
	require.Nil(t, fr.Torn)
	require.Len(t, fr.Envelopes, 3)
	require.Equal(t, 6, fr.Records)

	c, err := newStore(t, js).Create(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.ErrorIs(t, st.AddRecipients(ctx, c.ID(), bob.Recipient()), handle.ErrNotSealed)
	require.ErrorIs(t, st.RotateKey(ctx, c.ID(), bob.Recipient()), handle.ErrNotSealed)
}

// Shred on JetStream: every key record of the subject is replaced by one
// of the same length holding nothing, so that no store reads the session
// any more (the one that made it included); the log keeps its length and
// framing. A session with forks is refused until they are shredded; a
// clear one is refused.
func TestShred(t *testing.T) {
	alice, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	js := connect(t, runServer(t))
	st := newStore(t, js, With(handle.WithRecipients(alice.Recipient())), With(handle.WithIdentities(alice)))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, ev(0, 0), ev(0, 1), ev(0, 2))
	require.NoError(t, err)
	require.NoError(t, h.Close())
	id := h.ID()
	f, err := st.Fork(ctx, id, 1)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, st.PutDerived(ctx, id, "k", []byte("v")))
	before := load(t, st, id).log

	_, err = st.Shred(ctx, id, false)
	var de *handle.DependentsError
	require.ErrorAs(t, err, &de)
	require.Equal(t, []string{f.ID()}, de.Dependents)
	rep, err := st.Shred(ctx, id, true)
	require.NoError(t, err)
	require.Equal(t, handle.ShredReport{Shredded: []string{id, f.ID()}, Envelopes: 2}, rep, "the session first, then its fork")

	after := load(t, st, id).log
	require.Len(t, after, len(before))
	fr, err := seal.Check(bytes.NewReader(after), seal.Raw, id)
	require.NoError(t, err)
	require.Len(t, fr.Envelopes, 1)
	require.True(t, fr.Envelopes[0].Shredded)
	for _, s := range []*Store{st, newStore(t, js, With(handle.WithIdentities(alice)))} {
		_, err = s.Stat(ctx, id)
		require.ErrorIs(t, err, seal.ErrNoKey)
		_, err = s.Open(ctx, id, handle.ReadOnly)
		require.ErrorIs(t, err, seal.ErrNoKey)
		_, err = s.GetDerived(ctx, id, "k")
		require.ErrorIs(t, err, handle.ErrNotFound)
	}

	clear := newStore(t, js)
	cl, err := clear.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, cl.Close())
	_, err = st.Shred(ctx, cl.ID(), false)
	require.ErrorIs(t, err, handle.ErrNotSealed)
}

// ExportSealed writes a standalone sealed raw log of a sealed session, a
// fork's inherited events its own: the same identity reads it through a
// file store, every event as the session holds it, no marker in clear.
func TestExportSealed(t *testing.T) {
	alice, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	js := connect(t, runServer(t))
	st := newStore(t, js, With(handle.WithRecipients(alice.Recipient())), With(handle.WithIdentities(alice)))
	h, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, ev(0, 0), ev(0, 1), ev(0, 2))
	require.NoError(t, err)
	require.NoError(t, h.Close())
	f, err := st.Fork(ctx, h.ID(), 1)
	require.NoError(t, err)
	_, err = f.Append(ctx, ev(0, 9))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	var want []eventlog.Event
	r, err := st.Open(ctx, f.ID(), handle.ReadOnly)
	require.NoError(t, err)
	for e, err := range r.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		want = append(want, e)
	}
	require.NoError(t, r.Close())

	var out bytes.Buffer
	n, err := st.ExportSealed(ctx, f.ID(), &out, 2)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.NotContains(t, out.String(), `"w":`, "no event data in clear")
	fsys := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fsys, "/x/"+f.ID()+".jsonl", out.Bytes(), 0o600))
	got, err := file.New(fsys, "/x", handle.WithIdentities(alice)).Open(ctx, f.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer got.Close()
	require.Nil(t, got.Header().Parent, "standalone")
	var read []eventlog.Event
	for e, err := range got.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		read = append(read, e)
	}
	require.Equal(t, want, read)

	clear := newStore(t, js)
	cl, err := clear.Create(ctx)
	require.NoError(t, err)
	require.NoError(t, cl.Close())
	_, err = clear.ExportSealed(ctx, cl.ID(), &out, handle.End)
	require.ErrorIs(t, err, handle.ErrNotSealed)
}
