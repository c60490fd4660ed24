package handle_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/redact"
)

// A secret-shaped token built at run time, so that no scanner flags this
// file: an AWS access key ID.
var awsKey = "AKIA" + strings.Repeat("Q7", 8)

func secretEvent() eventlog.Event {
	return eventlog.Event{Type: "tool/result", Time: 1, Data: json.RawMessage(`{"id":"c1","output":"key ` + awsKey + ` end"}`)}
}

// Redaction at write is on by default: what a write handle stores, reads
// back from memory and from the file, and digests is the redacted form,
// and the caller's events are left as they were. Each way of turning it
// off (the store, Create, Open) stores the event as given.
func TestRedactionAtWrite(t *testing.T) {
	ctx := t.Context()
	redacted := `{"id":"c1","output":"key [REDACTED:aws-access-key-id] end","$redacted":[{"path":["output"],"kinds":["aws-access-key-id"]}]}`
	plain := string(secretEvent().Data)
	cases := []struct {
		name  string
		store []handle.Option
		open  func(st *handle.FileStore) handle.Handle
		want  string
	}{
		{"default", nil, func(st *handle.FileStore) handle.Handle {
			h, err := st.Create(ctx)
			require.NoError(t, err)
			return h
		}, redacted},
		{"store off", []handle.Option{handle.WithoutRedaction()}, func(st *handle.FileStore) handle.Handle {
			h, err := st.Create(ctx)
			require.NoError(t, err)
			return h
		}, plain},
		{"create off", nil, func(st *handle.FileStore) handle.Handle {
			h, err := st.Create(ctx, handle.Unredacted())
			require.NoError(t, err)
			return h
		}, plain},
		{"open off", nil, func(st *handle.FileStore) handle.Handle {
			h, err := st.Create(ctx)
			require.NoError(t, err)
			id := h.ID()
			require.NoError(t, h.Close())
			h, err = st.Open(ctx, id, handle.ReadWrite, handle.OpenUnredacted())
			require.NoError(t, err)
			return h
		}, plain},
		{"reopened writer redacts", nil, func(st *handle.FileStore) handle.Handle {
			h, err := st.Create(ctx, handle.Unredacted())
			require.NoError(t, err)
			id := h.ID()
			require.NoError(t, h.Close())
			h, err = st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
			return h
		}, redacted},
		{"extra pattern", []handle.Option{handle.WithRedactor(redact.New(redact.WithPattern("acme", regexp.MustCompile(`end`))))}, func(st *handle.FileStore) handle.Handle {
			h, err := st.Create(ctx)
			require.NoError(t, err)
			return h
		}, `{"id":"c1","output":"key [REDACTED:aws-access-key-id] [REDACTED:acme]","$redacted":[{"path":["output"],"kinds":["acme","aws-access-key-id"]}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			st := handle.NewFileStore(fsys, "/s", c.store...)
			h := c.open(st)
			e := secretEvent()
			in := []eventlog.Event{e}
			_, err := h.Append(ctx, in...)
			require.NoError(t, err)
			require.Equal(t, plain, string(in[0].Data), "the caller's event is not changed")
			got := ztReadHandle(t, h)
			require.Len(t, got, 1)
			require.Equal(t, c.want, string(got[0].Data), "read back from the writer's memory")
			dig, _, err := h.LogDigest(ctx)
			require.NoError(t, err)
			require.NoError(t, h.Close())

			r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
			require.NoError(t, err)
			defer r.Close()
			got = ztReadHandle(t, r)
			require.Equal(t, c.want, string(got[0].Data), "read back from the file")
			want := eventlog.NewDigest()
			want.Add(got[0])
			require.Equal(t, want.String(), dig, "the digest is of what is stored")
			raw, err := afero.ReadFile(fsys, h.Path())
			require.NoError(t, err)
			require.Equal(t, c.want == plain, strings.Contains(string(raw), awsKey))
		})
	}
}

// A checkpoint appended after a redacted event carries the digest of the
// redacted log, and verifies when the log is read again.
func TestRedactionCheckpointDigest(t *testing.T) {
	ctx := context.Background()
	st := handle.NewFileStore(afero.NewMemMapFs(), "/s")
	h, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, secretEvent())
	require.NoError(t, err)
	dig, _, err := h.LogDigest(ctx)
	require.NoError(t, err)
	cp, _ := json.Marshal(map[string]string{"log": dig, "label": "ref " + awsKey})
	_, err = h.Append(ctx, eventlog.Event{Type: eventlog.TypeCheckpoint, Time: 2, Data: cp})
	require.NoError(t, err, "a checkpoint whose label holds a secret is redacted, its digest kept")
	require.NoError(t, h.Close())
	r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	evs := ztReadHandle(t, r)
	d := eventlog.NewDigest()
	d.Add(evs[0])
	c, err := eventlog.ParseCheckpoint(evs[1].Data)
	require.NoError(t, err)
	require.Equal(t, d.String(), c.Log)
	require.Contains(t, string(evs[1].Data), redact.Marker("aws-access-key-id"))
}
