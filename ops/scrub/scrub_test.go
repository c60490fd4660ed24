package scrub_test

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/scrub"
	"github.com/sessionlog/sessionlog/ops/verify"
	"github.com/sessionlog/sessionlog/recorder"
)

// Secret-shaped tokens built at run time.
var (
	ghToken = "ghp_" + strings.Repeat("aB3d", 9)
	awsKey  = "AKIA" + strings.Repeat("Q7", 8)
)

func clock() time.Time { return time.UnixMilli(1764450000000) }

// world is a store whose sessions were written without redaction: a
// session P with secrets in its events, a checkpoint label and a tool
// call; checkpoints with state digests (the Recorder's); a rollback; and
// a fork F of it with a checkpoint and a secret of its own.
type world struct {
	fsys  afero.Fs
	st    *file.Store
	p, f  string
	opts  []handle.Option
	files map[string][]byte // the files before
}

func newWorld(t *testing.T, opts ...handle.Option) *world {
	t.Helper()
	ctx := t.Context()
	w := &world{fsys: afero.NewMemMapFs(), opts: append([]handle.Option{handle.Unredacted()}, opts...)}
	w.st = file.New(w.fsys, "/s", w.opts...)
	h, err := w.st.Create(ctx)
	require.NoError(t, err)
	w.p = h.ID()
	rec, err := recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	turn := func(text string) {
		_, err := rec.BeginTurn(ctx, nil)
		require.NoError(t, err)
		_, err = rec.UserMessage(ctx, text, "")
		require.NoError(t, err)
		_, err = rec.BeginStep(ctx)
		require.NoError(t, err)
		_, err = rec.ToolCall(ctx, recorder.Call{ID: "c", Name: "bash", Args: json.RawMessage(`{"env":"GITHUB_TOKEN=` + ghToken + `"}`)})
		require.NoError(t, err)
		_, err = rec.ToolResult(ctx, recorder.Result{ID: "c", Output: "key " + awsKey + " and ACME-123456"})
		require.NoError(t, err)
		_, err = rec.EndStep(ctx)
		require.NoError(t, err)
		_, err = rec.EndTurn(ctx, recorder.Completed, "")
		require.NoError(t, err)
	}
	turn("hello")
	turn("my token " + ghToken)
	_, err = checkpoint.Create(ctx, h, checkpoint.WithLabel("at "+ghToken), checkpoint.WithClock(clock))
	require.NoError(t, err)
	_, err = checkpoint.Rollback(ctx, h, 3, checkpoint.WithReason("retry with "+awsKey), checkpoint.WithClock(clock))
	require.NoError(t, err)
	rec, err = recorder.New(ctx, h, recorder.WithClock(clock))
	require.NoError(t, err)
	turn("again")
	require.NoError(t, rec.Close())

	f, err := w.st.Fork(ctx, w.p, 10)
	require.NoError(t, err)
	w.f = f.ID()
	_, err = f.Append(ctx, eventlog.Event{Type: "user/message", Time: 1, Data: json.RawMessage(`{"text":"fork ` + ghToken + `"}`)})
	require.NoError(t, err)
	_, err = checkpoint.Create(ctx, f, checkpoint.WithClock(clock))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	w.files = map[string][]byte{}
	for _, id := range []string{w.p, w.f} {
		path, err := w.st.Path(id)
		require.NoError(t, err)
		w.files[path], err = afero.ReadFile(w.fsys, path)
		require.NoError(t, err)
	}
	return w
}

// old returns a read-only handle on session id as it was: a copy of the
// files before, as their holder keeps them.
func (w *world) old(t *testing.T, id string) handle.Handle {
	t.Helper()
	fsys := afero.NewMemMapFs()
	for p, b := range w.files {
		require.NoError(t, afero.WriteFile(fsys, p, b, 0o600))
	}
	h, err := file.New(fsys, "/s", w.opts...).Open(t.Context(), id, handle.ReadOnly)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

func (w *world) open(t *testing.T, id string) handle.Handle {
	t.Helper()
	h, err := w.st.Open(t.Context(), id, handle.ReadOnly)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

func (w *world) fileOf(t *testing.T, id string) string {
	t.Helper()
	path, err := w.st.Path(id)
	require.NoError(t, err)
	b, err := afero.ReadFile(w.fsys, path)
	require.NoError(t, err)
	return string(b)
}

// A redaction rewrites the session and its fork (refused without
// WithDescendants) with no secret left, the extra pattern's matches
// included; both verify (every log and state digest recomputed); each
// ends in the record of what it changed, which Check confirms against a
// copy of the files before; and any other change is found.
func TestRedactStoredLog(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "clear", true: "sealed"}[sealed], func(t *testing.T) {
			ctx := t.Context()
			var opts []handle.Option
			if sealed {
				id, err := age.GenerateX25519Identity()
				require.NoError(t, err)
				opts = []handle.Option{handle.WithRecipients(id.Recipient()), handle.WithIdentities(id)}
			}
			w := newWorld(t, opts...)
			acme := regexp.MustCompile(`ACME-[0-9]{6}`)

			_, err := scrub.Session(ctx, w.st, w.p, scrub.WithPattern("acme", acme))
			var de *handle.DependentsError
			require.ErrorAs(t, err, &de)
			require.Equal(t, []string{w.f}, de.Dependents)

			res, err := scrub.Session(ctx, w.st, w.p, scrub.WithPattern("acme", acme), scrub.WithDescendants(), scrub.WithClock(clock))
			require.NoError(t, err)
			require.Len(t, res, 2)
			require.Equal(t, w.p, res[0].ID)
			require.Equal(t, w.f, res[1].ID)
			for _, id := range []string{w.p, w.f} {
				file := w.fileOf(t, id)
				require.NotContains(t, file, ghToken)
				require.NotContains(t, file, awsKey)
				require.NotContains(t, file, "ACME-123456")
				rep := verify.Session(ctx, w.st, id)
				require.True(t, rep.OK, "%s: %+v", id, rep.Error)
				require.Positive(t, rep.Checkpoints)
				require.Zero(t, rep.Unchecked)
				require.NoError(t, scrub.Check(ctx, w.old(t, id), w.open(t, id)), id)
			}
			rec := res[0].Record
			require.Equal(t, int64(0), rec.From)
			require.NotEmpty(t, rec.Redacted)
			require.Equal(t, []scrub.Pattern{{Kind: "acme", RE: acme.String()}}, rec.Patterns)
			kinds := map[string]bool{}
			for _, r := range rec.Redacted {
				for _, k := range r.Kinds {
					kinds[k] = true
				}
			}
			require.Equal(t, map[string]bool{"github-token": true, "aws-access-key-id": true, "acme": true}, kinds)
			require.Equal(t, int64(11), res[1].Record.From, "the fork records its own rows")
			require.Len(t, res[1].Record.Redacted, 1)

			// The check finds what else changed (whatever leaves the new
			// log's checkpoints valid: Rewrite refuses any other): the
			// time of the last event before the record, one event more,
			// a wrong record.
			recSeq := res[0].Seq
			d := eventlog.NewDigest() // of the changed log, for "data"
			for name, change := range map[string]func(e eventlog.Event) []eventlog.Event{
				"data, its checkpoints' digests made anew": func(e eventlog.Event) []eventlog.Event {
					if e.Seq == 0 {
						d = eventlog.NewDigest()
					}
					if e.Type == "user/message" && strings.Contains(string(e.Data), "hello") {
						e.Data = json.RawMessage(`{"text":"HELLO"}`)
					}
					if e.Type == eventlog.TypeCheckpoint {
						e.Data, _ = json.Marshal(eventlog.CheckpointData{Log: d.String()})
					}
					d.Add(e)
					return []eventlog.Event{e}
				},
				"time": func(e eventlog.Event) []eventlog.Event {
					if e.Seq == recSeq-1 {
						e.Time++
					}
					return []eventlog.Event{e}
				},
				"one more": func(e eventlog.Event) []eventlog.Event {
					if e.Seq == recSeq {
						extra := eventlog.Event{Seq: e.Seq, Type: "user/message", Time: 1, Data: json.RawMessage(`{"text":"x"}`)}
						e.Seq++
						return []eventlog.Event{extra, e}
					}
					return []eventlog.Event{e}
				},
				"record": func(e eventlog.Event) []eventlog.Event {
					if e.Type == scrub.TypeRewrite {
						e.Data = json.RawMessage(strings.Replace(string(e.Data), `"redacted":[{`, `"redacted":[{"seq":1,"kinds":["x"]},{`, 1))
					}
					return []eventlog.Event{e}
				},
			} {
				before := w.fileOf(t, w.p)
				_, err := w.st.Rewrite(ctx, w.p, func(h handle.Handle) iter.Seq2[eventlog.Event, error] {
					return func(yield func(eventlog.Event, error) bool) {
						for e, err := range h.Read(ctx, 0, recSeq) {
							for _, c := range change(e) {
								if !yield(c, err) {
									return
								}
							}
						}
					}
				})
				require.NoError(t, err, name)
				err = scrub.Check(ctx, w.old(t, w.p), w.open(t, w.p))
				require.ErrorIs(t, err, scrub.ErrMismatch, name)
				path, _ := w.st.Path(w.p)
				require.NoError(t, afero.WriteFile(w.fsys, path, []byte(before), 0o600))
			}
			err = scrub.Check(ctx, w.old(t, w.p), w.old(t, w.p))
			require.ErrorIs(t, err, scrub.ErrMismatch, "a log that was never redacted has no record")
		})
	}
}

// Redacting a log twice changes nothing more: the second record lists no
// event, and checks.
func TestRedactTwice(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	_, err := scrub.Session(ctx, w.st, w.p, scrub.WithDescendants())
	require.NoError(t, err)
	h := w.open(t, w.p)
	var snap = map[string][]byte{}
	path, _ := w.st.Path(w.p)
	snap[path], err = afero.ReadFile(w.fsys, path)
	require.NoError(t, err)
	fpath, _ := w.st.Path(w.f)
	snap[fpath], err = afero.ReadFile(w.fsys, fpath)
	require.NoError(t, err)
	w.files = snap
	require.NoError(t, h.Close())
	res, err := scrub.Session(ctx, w.st, w.p, scrub.WithDescendants())
	require.NoError(t, err)
	require.Empty(t, res[0].Record.Redacted)
	require.NoError(t, scrub.Check(ctx, w.old(t, w.p), w.open(t, w.p)))
	_ = os.ErrNotExist
}
