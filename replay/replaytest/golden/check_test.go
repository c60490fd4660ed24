package golden_test

import (
	"encoding/json"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay/replaytest/golden"
)

// TestCheck: every status of Check, and what it leaves in the file.
func TestCheck(t *testing.T) {
	p := projection.NewTranscript()
	p.Apply(eventlog.Event{Seq: 0, Type: "user/message", Time: 1, Data: json.RawMessage(`{"text":"hi"}`)})
	state, err := golden.Marshal(p)
	require.NoError(t, err)
	compact, err := p.MarshalState()
	require.NoError(t, err)
	other := []byte("{\"messages\": []}\n")
	const path = "/g/x.golden.json"
	tests := []struct {
		name     string
		file     []byte // nil: no file
		update   bool
		status   golden.Status
		mismatch string // the mismatch's path, with Differs
		after    []byte // the file after; nil: none
	}{
		{name: "match", file: state, status: golden.Match, after: state},
		{name: "match, other layout", file: compact, status: golden.Match, after: compact},
		{name: "differs", file: other, status: golden.Differs, mismatch: "messages[0]", after: other},
		{name: "missing", status: golden.Missing},
		{name: "update creates", update: true, status: golden.Created, after: state},
		{name: "update rewrites other JSON", file: other, update: true, status: golden.Updated, after: state},
		{name: "update rewrites another layout", file: compact, update: true, status: golden.Updated, after: state},
		{name: "update leaves the same bytes", file: state, update: true, status: golden.Unchanged, after: state},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			if tt.file != nil {
				require.NoError(t, afero.WriteFile(fsys, path, tt.file, 0o644))
			}
			res, err := golden.Check(path, p, tt.update, golden.WithFs(fsys))
			require.NoError(t, err)
			require.Equal(t, tt.status, res.Status)
			if tt.mismatch != "" {
				require.NotNil(t, res.Mismatch)
				require.Equal(t, tt.mismatch, res.Mismatch.Path)
			} else {
				require.Nil(t, res.Mismatch)
			}
			got, err := afero.ReadFile(fsys, path)
			if tt.after == nil {
				require.Error(t, err, "no file is written")
				return
			}
			require.NoError(t, err)
			require.Equal(t, string(tt.after), string(got))
		})
	}
}

// TestCheckWriteError: a golden that cannot be written is an error.
func TestCheckWriteError(t *testing.T) {
	fsys := afero.NewReadOnlyFs(afero.NewMemMapFs())
	_, err := golden.Check("/g/x.golden.json", projection.NewTranscript(), true, golden.WithFs(fsys))
	require.Error(t, err)
}
