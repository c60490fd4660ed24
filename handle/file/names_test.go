package file_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// A person names a session as git names a commit: by the start of its ID,
// or by its labels.
func ExampleStore_Resolve() {
	ctx := context.Background()
	store := file.New(afero.NewMemMapFs(), "sessions")
	for _, s := range []struct{ id, agent string }{
		{"01KC0000000000000000000001", "coder"},
		{"01KC0000000000000000000002", "reviewer"},
	} {
		h, err := store.Create(ctx, handle.WithID(s.id), handle.WithLabels(map[string]string{"agent": s.agent}))
		if err != nil {
			log.Fatal(err)
		}
		h.Close()
	}
	for _, name := range []string{"01kc0000000000000000000002", "agent=coder", "01KC"} {
		info, err := store.Resolve(ctx, name)
		var amb *handle.AmbiguousError
		switch {
		case errors.As(err, &amb):
			fmt.Printf("%s: %d candidates\n", name, len(amb.Candidates))
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Printf("%s: %s\n", name, info.ID)
		}
	}
	// Output:
	// 01kc0000000000000000000002: 01KC0000000000000000000002
	// agent=coder: 01KC0000000000000000000001
	// 01KC: 2 candidates
}

// namesStore holds four sessions: two whose IDs share a long prefix, one
// whose labels only it has, and one whose file is damaged.
func namesStore(t *testing.T) handle.Store {
	t.Helper()
	fs := afero.NewMemMapFs()
	st := file.New(fs, "/s")
	for _, s := range []struct {
		id      string
		labels  map[string]string
		created int64
	}{
		{"01KC0000000000000000000001", map[string]string{"agent": "coder", "task": "t1"}, 1000},
		{"01KC0000000000000000000002", map[string]string{"agent": "coder", "task": "t2", "cwd": "/a,b"}, 2000},
		{"01KD0000000000000000000003", map[string]string{"agent": "reviewer"}, 3000},
	} {
		h, err := st.Create(t.Context(), handle.WithID(s.id), handle.WithLabels(s.labels), handle.WithCreatedAt(s.created))
		require.NoError(t, err)
		_, err = h.Append(t.Context(), eventlog.Event{Type: "x", Time: s.created + 10})
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	require.NoError(t, afero.WriteFile(fs, "/s/01KE0000000000000000000004.jsonl", []byte("not a header\n"), 0o600))
	return st
}

func TestResolve(t *testing.T) {
	st := namesStore(t)
	for _, tc := range []struct {
		name, want string
	}{
		{"01KC0000000000000000000001", "01KC0000000000000000000001"},
		{"01kc0000000000000000000002", "01KC0000000000000000000002"}, // either case
		{"01KD0000000000000000000003"[:25], "01KD0000000000000000000003"},
		{"01KD", "01KD0000000000000000000003"},
		{"01kd", "01KD0000000000000000000003"},
		{"agent=reviewer", "01KD0000000000000000000003"},
		{"agent=coder,task=t2", "01KC0000000000000000000002"},
		{"cwd=/a,b", "01KC0000000000000000000002"}, // a comma inside a value
		{"task=t1,agent=coder", "01KC0000000000000000000001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := st.Resolve(t.Context(), tc.name)
			require.NoError(t, err)
			require.Equal(t, tc.want, info.ID)
			require.NotEmpty(t, info.Path)
		})
	}
}

func TestResolveAmbiguous(t *testing.T) {
	st := namesStore(t)
	for _, tc := range []struct {
		name string
		want []string // the last active first
	}{
		{"01KC", []string{"01KC0000000000000000000002", "01KC0000000000000000000001"}},
		{"agent=coder", []string{"01KC0000000000000000000002", "01KC0000000000000000000001"}},
		// The damaged session counts: a prefix never picks the other one
		// because one cannot be read.
		{"01K", []string{"01KD0000000000000000000003", "01KC0000000000000000000002", "01KC0000000000000000000001", "01KE0000000000000000000004"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := st.Resolve(t.Context(), tc.name)
			var amb *handle.AmbiguousError
			require.ErrorAs(t, err, &amb)
			require.Equal(t, tc.name, amb.Name)
			var ids []string
			for _, c := range amb.Candidates {
				ids = append(ids, c.ID)
			}
			require.Equal(t, tc.want, ids)
		})
	}
}

func TestResolveNone(t *testing.T) {
	st := namesStore(t)
	for _, tc := range []struct {
		name string
		is   error
		msg  string
	}{
		{"01KF", handle.ErrNotFound, "no session ID starts with 01KF"},
		{"01KF0000000000000000000009", handle.ErrNotFound, "01KF0000000000000000000009"},
		{"agent=nobody", handle.ErrNotFound, "no session has the labels agent=nobody"},
		{"hello", handle.ErrInvalidID, "neither a session ID"}, // L and O are not Crockford base32
		{"81KC", handle.ErrInvalidID, "neither"},               // no ID starts with 8
		{"01KC00000000000000000000011", handle.ErrInvalidID, "neither"},
		{"=x", handle.ErrInvalidID, "neither"},
		{"", handle.ErrInvalidID, "neither"},
		// The damaged session named alone: its own error.
		{"01KE", eventlog.ErrCorrupt, "01KE0000000000000000000004"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := st.Resolve(t.Context(), tc.name)
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestLabelQuery(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"agent=coder", map[string]string{"agent": "coder"}},
		{"a=1,b=2", map[string]string{"a": "1", "b": "2"}},
		{"cwd=/a,b,c=3", map[string]string{"cwd": "/a,b", "c": "3"}},
		{"a=", map[string]string{"a": ""}},
		{"a=x=y", map[string]string{"a": "x=y"}},
		{"01KC", nil},
		{"=v", nil},
		{"a=1,=2", nil},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, _ := handle.ParseName(tc.in)
			ok := got != nil
			require.Equal(t, tc.want != nil, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestLastActive(t *testing.T) {
	info := handle.Info{Header: eventlog.Header{CreatedAt: 100}}
	require.Equal(t, int64(100), info.LastActive(), "no event: its creation")
	info.LastType, info.LastTime = "x", 50
	require.Equal(t, int64(100), info.LastActive(), "an event timed before the creation")
	info.LastTime = 200
	require.Equal(t, int64(200), info.LastActive())
}
