package file_test

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
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// A secret-shaped token built at run time, so that no scanner flags this
// file: an AWS access key ID.
var awsKey = "AKIA" + strings.Repeat("Q7", 8)

func secretEvent() eventlog.Event {
	return eventlog.Event{Type: "tool/result", Time: 1, Data: json.RawMessage(`{"id":"c1","output":"key ` + awsKey + ` end"}`)}
}

// The file store's redaction options (the rest of redaction at write is
// the contract's, storetest "RedactionAtWrite"): by default the log file
// holds no secret; handle.Unredacted stores the event as given;
// A Config.Redactor's extra patterns apply beside the detectors.
func TestRedactionAtWrite(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		name  string
		store []handle.Option
		want  string
	}{
		{"default", nil, `{"id":"c1","output":"key [REDACTED:aws-access-key-id] end","$redacted":[{"path":["output"],"kinds":["aws-access-key-id"]}]}`},
		{"store off", []handle.Option{handle.Unredacted()}, string(secretEvent().Data)},
		{"extra pattern", []handle.Option{func(c *handle.Config) { c.Redactor = redact.New(redact.WithPattern("acme", regexp.MustCompile(`end`))) }},
			`{"id":"c1","output":"key [REDACTED:aws-access-key-id] [REDACTED:acme]","$redacted":[{"path":["output"],"kinds":["acme","aws-access-key-id"]}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			st := file.New(fsys, "/s", c.store...)
			h, err := st.Create(ctx)
			require.NoError(t, err)
			_, err = h.Append(ctx, secretEvent())
			require.NoError(t, err)
			require.NoError(t, h.Close())
			r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
			require.NoError(t, err)
			defer r.Close()
			got := ztReadHandle(t, r)
			require.Len(t, got, 1)
			require.Equal(t, c.want, string(got[0].Data))
			raw, err := afero.ReadFile(fsys, h.Path())
			require.NoError(t, err)
			require.Equal(t, c.name == "store off", strings.Contains(string(raw), awsKey), "the secret in the log file")
		})
	}
}

// A checkpoint appended after a redacted event carries the digest of the
// redacted log, and verifies when the log is read again.
func TestRedactionCheckpointDigest(t *testing.T) {
	ctx := context.Background()
	st := file.New(afero.NewMemMapFs(), "/s")
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
