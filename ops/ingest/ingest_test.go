package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
	"github.com/sessionlog/sessionlog/importer/swe"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
	"github.com/sessionlog/sessionlog/ops/ingest"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// world is a memory file system holding sources and a store.
type world struct {
	t  *testing.T
	fs afero.Fs
	st *file.Store
}

func newWorld(t *testing.T, opts ...handle.Option) *world {
	fs := afero.NewMemMapFs()
	return &world{t: t, fs: fs, st: file.New(fs, "/store", opts...)}
}

func (w *world) write(path string, data []byte) {
	w.t.Helper()
	require.NoError(w.t, afero.WriteFile(w.fs, path, data, 0o600))
}

func (w *world) importAll(paths []string, opts ...ingest.Option) ingest.Summary {
	w.t.Helper()
	sum, err := ingest.Import(w.t.Context(), w.st, paths, append([]ingest.Option{ingest.WithFs(w.fs)}, opts...)...)
	require.NoError(w.t, err)
	return sum
}

// events reads every event of session id.
func (w *world) events(id string) []eventlog.Event {
	w.t.Helper()
	h, err := w.st.Open(w.t.Context(), id, handle.ReadOnly)
	require.NoError(w.t, err)
	defer h.Close()
	var out []eventlog.Event
	for e, err := range h.Read(w.t.Context(), 0, handle.End) {
		require.NoError(w.t, err)
		out = append(out, e)
	}
	return out
}

func (w *world) sessions() int {
	w.t.Helper()
	infos, err := w.st.List(w.t.Context())
	require.NoError(w.t, err)
	return len(infos)
}

func statuses(sum ingest.Summary) []ingest.Status {
	var out []ingest.Status
	for _, r := range sum.Results {
		out = append(out, r.Status)
	}
	return out
}

// corpus writes a folder of traces of every format (from the generators:
// a Claude Code transcript with a subagent, rollouts, dsh logs,
// trajectories) and a sessionlog export, and returns how many sources.
func corpus(w *world, dir string) int {
	n := 0
	for name, gen := range importertest.Generators() {
		for seed := range uint64(3) {
			src, _ := gen(seed)
			ext := ".jsonl"
			if name == "swe-agent" {
				ext = ".traj"
			}
			file := fmt.Sprintf("%s/%s/rollout-%d%s", dir, name, seed, ext)
			w.write(file, src)
			n++
		}
	}
	// A transcript and its subagent, which its Task call ran.
	w.write(dir+"/claude/S.jsonl", []byte(strings.Join([]string{
		`{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","sessionId":"S","message":{"role":"user","content":"look"}}`,
		`{"type":"assistant","uuid":"a1","timestamp":"2026-01-01T00:00:01Z","sessionId":"S","message":{"id":"m1","model":"x","content":[{"type":"tool_use","id":"t1","name":"Task","input":{}}]}}`,
		`{"type":"user","uuid":"u2","timestamp":"2026-01-01T00:00:02Z","sessionId":"S","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]},"toolUseResult":{"agentId":"k1"}}`,
		`{"type":"assistant","uuid":"a2","timestamp":"2026-01-01T00:00:03Z","sessionId":"S","message":{"id":"m2","model":"x","content":[{"type":"text","text":"ok"}]}}`,
	}, "\n")+"\n"))
	w.write(dir+"/claude/S/subagents/agent-k1.jsonl", []byte(
		`{"type":"user","uuid":"s1","isSidechain":true,"agentId":"k1","timestamp":"2026-01-01T00:00:01Z","sessionId":"S","message":{"role":"user","content":"sub"}}`+"\n"+
			`{"type":"assistant","uuid":"s2","isSidechain":true,"agentId":"k1","timestamp":"2026-01-01T00:00:02Z","sessionId":"S","message":{"id":"ms","model":"x","content":[{"type":"text","text":"found"}]}}`+"\n"))
	n += 2
	w.write(dir+"/export.jsonl", []byte(`{"format":"sessionlog","version":1,"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","createdAt":1,"labels":{"a":"b"}}`+"\n"+
		`{"seq":0,"type":"x","time":1,"data":{"k":1}}`+"\n"))
	w.write(dir+"/README.md", []byte("not a trace\n")) // not a file to import: skipped by name
	return n + 1
}

// TestImportFolderTwice: a folder of every format, walked recursively,
// each file's format found by its content: every source created; the
// same folder again creates nothing (unchanged); a copy of the folder
// elsewhere is the same sources (unchanged); a subagent is the child of
// the call that ran it.
func TestImportFolderTwice(t *testing.T) {
	w := newWorld(t)
	n := corpus(w, "/src")
	var progress []ingest.Progress
	first := w.importAll([]string{"/src"}, ingest.WithProgress(func(p ingest.Progress) { progress = append(progress, p) }))
	require.Len(t, first.Results, n)
	for _, r := range first.Results {
		require.Equal(t, ingest.Created, r.Status, "%s: %s", r.Source, r.Reason)
		require.NotEmpty(t, r.Format)
	}
	require.Equal(t, n, first.Created)
	require.Equal(t, n, w.sessions())
	for _, r := range first.Results {
		checkConversation(t, w, r)
	}
	last := progress[len(progress)-1]
	require.Equal(t, n, last.FilesDone)
	require.Equal(t, last.Bytes, last.BytesDone)
	require.Empty(t, last.Current)

	again := w.importAll([]string{"/src"})
	require.Equal(t, slices.Repeat([]ingest.Status{ingest.Unchanged}, n), statuses(again), "nothing created the second time")
	require.Equal(t, n, w.sessions())

	copyTree(t, w.fs, "/src", "/elsewhere/copy")
	moved := w.importAll([]string{"/elsewhere/copy"})
	require.Equal(t, slices.Repeat([]ingest.Status{ingest.Unchanged}, n), statuses(moved), "a copy is the same sources")
	for i := range moved.Results {
		require.Equal(t, first.Results[i].ID, moved.Results[i].ID)
	}

	var parent, child ingest.Result
	for _, r := range first.Results {
		switch filepath.Base(r.Source) {
		case "S.jsonl":
			parent = r
		case "agent-k1.jsonl":
			child = r
		}
	}
	info, err := w.st.Stat(t.Context(), child.ID)
	require.NoError(t, err)
	require.Equal(t, &eventlog.Parent{ID: parent.ID, Seq: 3, Mode: eventlog.ModeChild, Call: "t1"}, info.Header.Parent)
}

// checkConversation checks the session a foreign source r made: it holds
// every prompt (and no other user/message: no meta record), assistant
// text, call and result of the source, counted by the test's own reading
// of the source (importertest.SourceCounts), in its live branch; every
// turn is closed. It returns what it counted.
func checkConversation(t *testing.T, w *world, r ingest.Result) importertest.Counts {
	t.Helper()
	if r.Format == ingest.Sessionlog {
		return importertest.Counts{}
	}
	src, err := afero.ReadFile(w.fs, r.Source)
	require.NoError(t, err)
	want, err := importertest.SourceCounts(r.Format, src)
	require.NoError(t, err, r.Source)
	events := w.events(r.ID)
	importertest.CheckCounts(t, want, importertest.SessionCounts(live(events)), r.Source)
	importertest.CheckClosed(t, events)
	return want
}

// copyTree copies the files under from to to, under the same relative
// paths.
func copyTree(t *testing.T, fsys afero.Fs, from, to string) {
	t.Helper()
	require.NoError(t, afero.Walk(fsys, from, func(p string, fi fs.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		b, err := afero.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if err := fsys.MkdirAll(filepath.Dir(filepath.Join(to, rel)), 0o700); err != nil {
			return err
		}
		return afero.WriteFile(fsys, filepath.Join(to, rel), b, 0o600)
	}))
}

// TestDetect: each format by its content; a file none recognises, or more
// than one, names the formats tried.
func TestDetect(t *testing.T) {
	w := newWorld(t)
	reg := formats.Registry()
	for name, gen := range importertest.Generators() {
		src, _ := gen(1)
		w.write("/d/"+name, src)
		got, err := ingest.Detect(w.fs, "/d/"+name, reg)
		require.NoError(t, err)
		require.Equal(t, name, got)
	}
	w.write("/d/log", []byte(`{"format":"sessionlog","version":1,"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","createdAt":1}`+"\n"))
	got, err := ingest.Detect(w.fs, "/d/log", reg)
	require.NoError(t, err)
	require.Equal(t, ingest.Sessionlog, got)
	w.write("/d/zst", []byte{0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3})
	got, err = ingest.Detect(w.fs, "/d/zst", reg)
	require.NoError(t, err)
	require.Equal(t, ingest.Sessionlog, got, "zstd frames: a sessionlog log")

	w.write("/d/text", []byte("hello\n"))
	_, err = ingest.Detect(w.fs, "/d/text", reg)
	require.ErrorIs(t, err, ingest.ErrUnknownFormat)
	require.Contains(t, err.Error(), "/d/text is none of the formats tried (sessionlog, claude, codex, dsh, swe-agent, by their content)")
	w.write("/d/both", []byte(`{"format":"sessionlog","type":"user","sessionId":"S"}`+"\n"))
	_, err = ingest.Detect(w.fs, "/d/both", reg)
	require.ErrorIs(t, err, ingest.ErrAmbiguous)
	require.Contains(t, err.Error(), "could be sessionlog or claude")
}

// TestImportUsage: what cannot be imported at all (an unknown format or
// encoding) is an ErrUsage error, and nothing is imported; a file that is
// no trace fails alone.
func TestImportUsage(t *testing.T) {
	w := newWorld(t)
	w.write("/src/a.traj", []byte("{}"))
	for name, opt := range map[string]ingest.Option{"unknown format": ingest.From("word"), "unknown encoding": ingest.WithEncoding("gzip")} {
		t.Run(name, func(t *testing.T) {
			_, err := ingest.Import(t.Context(), w.st, []string{"/src"}, opt, ingest.WithFs(w.fs))
			require.ErrorIs(t, err, ingest.ErrUsage)
			require.Zero(t, w.sessions())
		})
	}
	sum := w.importAll([]string{"/src/a.traj"})
	require.Equal(t, []ingest.Status{ingest.Failed}, statuses(sum))
	require.ErrorIs(t, sum.Results[0].Err, ingest.ErrUnknownFormat)
	require.Zero(t, w.sessions(), "nothing kept of a failed source")
}

// Regression: a missing path among several aborted the whole import
// ("nothing to import: … no file or folder"). A path that gives nothing
// to import — there is none, it holds no file to import, none of the
// format asked — is a failed result with its reason, and the other paths
// are imported.
func TestImportBadPaths(t *testing.T) {
	w := newWorld(t)
	src, _ := importertest.GenSWE(1)
	w.write("/src/a.traj", src)
	require.NoError(t, w.fs.MkdirAll("/empty", 0o700))
	sum := w.importAll([]string{"/none", "/src/a.traj", "/empty"})
	require.Equal(t, []ingest.Status{ingest.Failed, ingest.Created, ingest.Failed}, statuses(sum))
	require.Equal(t, 1, w.sessions(), "the file between them is imported")
	missing := sum.Results[0]
	require.Equal(t, "/none", missing.Source)
	require.ErrorIs(t, missing.Err, fs.ErrNotExist)
	require.Equal(t, "/none: no such file or folder", missing.Reason)
	var ae *ingest.ArgError
	require.ErrorAs(t, sum.Results[2].Err, &ae)
	require.Equal(t, "/empty: no file to import in it (*.jsonl, *.jsonl.zst, *.traj)", sum.Results[2].Reason)
	require.Equal(t, 2, sum.Failed)

	sum = w.importAll([]string{"/src"}, ingest.From("claude"))
	require.Equal(t, []ingest.Status{ingest.Failed}, statuses(sum))
	require.Equal(t, "/src: no file to import in it (the files of claude)", sum.Results[0].Reason)
}

// TestImportGrown: a trace imported while it was still being written
// grows, and each import appends to its one session (a rollback of what
// the end had closed, then the new events); the session then holds every
// record of the whole trace, its conversation is a fresh import's, one
// more import changes nothing, and neither does a copy of the trace taken
// before it grew.
func TestImportGrown(t *testing.T) {
	for _, tc := range []struct{ format, encoding string }{
		{"claude", handle.EncodingRaw}, {"codex", handle.EncodingRaw}, {"dsh", handle.EncodingRaw}, {"claude", handle.EncodingZstd},
	} {
		format := tc.format
		t.Run(format+"/"+tc.encoding, func(t *testing.T) {
			gen := importertest.Generators()[format]
			var src []byte
			for seed := uint64(0); ; seed++ {
				if src, _ = gen(seed); bytes.Count(src, []byte("\n")) > 30 {
					break
				}
			}
			lines := bytes.SplitAfter(src, []byte("\n"))
			w := newWorld(t, handle.WithEncoding(tc.encoding))
			var id string
			for k, cut := range []int{len(lines) / 3, len(lines) * 2 / 3, len(lines)} {
				w.write("/src/rollout-x.jsonl", bytes.Join(lines[:cut], nil))
				sum := w.importAll([]string{"/src/rollout-x.jsonl"}, ingest.From(format))
				require.Len(t, sum.Results, 1)
				r := sum.Results[0]
				if k == 0 {
					require.Equal(t, ingest.Created, r.Status, r.Reason)
					id = r.ID
					continue
				}
				require.Equal(t, ingest.Appended, r.Status, "import %d: %s", k+1, r.Reason)
				require.Equal(t, id, r.ID)
			}
			require.Equal(t, 1, w.sessions())
			grown := w.events(id)
			imp, err := formats.Registry().Lookup(format)
			require.NoError(t, err)
			fresh, err := importer.Parse(t.Context(), imp, bytes.NewReader(src), "/src/rollout-x.jsonl", importer.Config{})
			require.NoError(t, err)
			var want, got []string
			for _, e := range fresh.Events {
				if r, ok := importer.RecordOf(format, e); ok {
					want = append(want, string(r))
				}
			}
			for _, e := range grown {
				if r, ok := importer.RecordOf(format, e); ok {
					got = append(got, string(r))
				}
			}
			require.Equal(t, want, got, "every record of the whole trace, once")
			importertest.CheckCounts(t, importertest.SessionCounts(fresh.Events), importertest.SessionCounts(live(grown)), "the grown session's live branch")
			importertest.CheckClosed(t, grown)

			sum := w.importAll([]string{"/src/rollout-x.jsonl"}, ingest.From(format))
			require.Equal(t, []ingest.Status{ingest.Unchanged}, statuses(sum))

			// A copy taken before it grew is the same source: its session
			// holds it (regression: it made a second session).
			w.write("/older/rollout-x.jsonl", bytes.Join(lines[:len(lines)/3], nil))
			sum = w.importAll([]string{"/older/rollout-x.jsonl"}, ingest.From(format))
			require.Equal(t, []ingest.Status{ingest.Unchanged}, statuses(sum), sum.Results[0].Reason)
			require.Equal(t, id, sum.Results[0].ID)
			require.Contains(t, sum.Results[0].Reason, "an earlier copy")
			require.Equal(t, 1, w.sessions())
		})
	}
}

// live is events with what their import rollbacks undid taken out.
func live(events []eventlog.Event) []eventlog.Event {
	var out []eventlog.Event
	for _, e := range events {
		if e.Type == eventlog.TypeRollback {
			var d struct {
				To    int64  `json:"to"`
				Label string `json:"label"`
			}
			if json.Unmarshal(e.Data, &d) == nil && d.Label == ingest.GrowLabel {
				for len(out) > 0 && out[len(out)-1].Seq > d.To {
					out = out[:len(out)-1]
				}
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// TestImportRewrittenSource: a source whose records are not those its
// session holds (rewritten, not grown) makes a session of its own; one
// first imported partial never grows (its labels say partial).
func TestImportRewrittenSource(t *testing.T) {
	w := newWorld(t)
	src, _ := importertest.GenCodex(2)
	lines := bytes.SplitAfter(src, []byte("\n"))
	w.write("/src/rollout-x.jsonl", src)
	first := w.importAll([]string{"/src"}).Results[0]
	w.write("/src/rollout-x.jsonl", append(append([]byte{}, lines[0]...), bytes.Join(lines[2:], nil)...))
	again := w.importAll([]string{"/src"}).Results[0]
	require.Equal(t, ingest.Created, again.Status)
	require.NotEqual(t, first.ID, again.ID)

	damaged := append(append(append([]byte{}, bytes.Join(lines[:4], nil)...), "{garbage\n"...), bytes.Join(lines[4:], nil)...)
	w.write("/src2/rollout-y.jsonl", damaged)
	cut := w.importAll([]string{"/src2"}).Results[0]
	require.Equal(t, ingest.Created, cut.Status)
	require.Equal(t, 5, cut.Partial.Line)
	info, err := w.st.Stat(t.Context(), cut.ID)
	require.NoError(t, err)
	require.Equal(t, "5", info.Header.Labels[ingest.LabelPartial])
	w.write("/src2/rollout-y.jsonl", src) // fixed
	fixed := w.importAll([]string{"/src2"}).Results[0]
	require.Contains(t, []ingest.Status{ingest.Unchanged, ingest.Created}, fixed.Status)
	require.NotEqual(t, cut.ID, fixed.ID, "a partial session is not grown")
}

// TestImportSourceChanged: a file that changes between the two readings
// of an import (a writer still at it) fails, and nothing is created.
func TestImportSourceChanged(t *testing.T) {
	w := newWorld(t)
	src, _ := importertest.GenClaude(4)
	w.write("/src/s.jsonl", src)
	then := bytes.Replace(src, []byte(`"sessionId":"`), []byte(`"sessionId":"x`), 1)
	require.NotEqual(t, src, then)
	changing := &changingFs{Fs: w.fs, path: "/src/s.jsonl", then: then}
	sum, err := ingest.Import(t.Context(), w.st, []string{"/src/s.jsonl"}, ingest.WithFs(changing), ingest.From("claude"))
	require.NoError(t, err)
	require.Equal(t, []ingest.Status{ingest.Failed}, statuses(sum))
	require.Contains(t, sum.Results[0].Reason, "the file changed while it was imported")
	require.Zero(t, w.sessions())
}

// changingFs rewrites path with then after the file's first open.
type changingFs struct {
	afero.Fs
	path  string
	then  []byte
	opens int
}

func (c *changingFs) Open(name string) (afero.File, error) {
	if name == c.path {
		c.opens++
		if c.opens == 2 {
			if err := afero.WriteFile(c.Fs, name, c.then, 0o600); err != nil {
				return nil, err
			}
		}
	}
	return c.Fs.Open(name)
}

// TestImportNative: a sessionlog file keeps its ID, labels and createdAt;
// its ID is its identity: again it is unchanged, grown it is appended to,
// another log of that ID is a conflict (ErrExists) that changes nothing.
func TestImportNative(t *testing.T) {
	w := newWorld(t)
	head := `{"format":"sessionlog","version":1,"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","createdAt":7,"labels":{"agent":"coder"}}` + "\n"
	rows := []string{`{"seq":0,"type":"a","time":1,"data":{"k":1}}`, `{"seq":1,"type":"b","time":2}`, `{"seq":2,"type":"c","time":3}`}
	first := head + rows[0] + "\n" + rows[1] + "\n"
	w.write("/x/export.jsonl", []byte(first))
	r := w.importAll([]string{"/x/export.jsonl"}).Results[0]
	require.Equal(t, ingest.Created, r.Status)
	require.Equal(t, int64(len(first)), r.SourceBytes, "the summary's source bytes (regression: 0 for a sessionlog file)")
	require.Equal(t, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", r.ID)
	info, err := w.st.Stat(t.Context(), r.ID)
	require.NoError(t, err)
	require.Equal(t, int64(7), info.Header.CreatedAt)
	require.Equal(t, map[string]string{"agent": "coder"}, info.Header.Labels)

	require.Equal(t, ingest.Unchanged, w.importAll([]string{"/x/export.jsonl"}).Results[0].Status)
	w.write("/y/later.jsonl", []byte(head+strings.Join(rows, "\n")+"\n"))
	r = w.importAll([]string{"/y/later.jsonl"}).Results[0]
	require.Equal(t, ingest.Appended, r.Status, r.Reason)
	require.Equal(t, int64(len(head+strings.Join(rows, "\n")+"\n")), r.SourceBytes)
	require.Equal(t, int64(3), r.Events)
	require.Len(t, w.events(r.ID), 3)

	w.write("/z/other.jsonl", []byte(head+`{"seq":0,"type":"z","time":1}`+"\n"))
	r = w.importAll([]string{"/z/other.jsonl"}).Results[0]
	require.Equal(t, ingest.Failed, r.Status)
	require.ErrorIs(t, r.Err, handle.ErrExists)
	require.Len(t, w.events("01JDX3N0Q3Z8Y6W2D1V5K7M9PA"), 3, "untouched")
}

// A foreign trace's events are redacted as they are imported (on by
// default): the session holds no secret, and importing the trace again —
// unchanged, then grown — recognises the session by comparing both sides
// redacted; so does a default import of a trace first imported without
// redaction (its session keeps what it holds: redacting a stored log is
// redact.Log's).
func TestImportRedacts(t *testing.T) {
	secret := "ghp_" + strings.Repeat("Zx9q", 9) // a GitHub token, built at run time
	line := func(i int, text string) string {
		return fmt.Sprintf(`{"type":"user","uuid":"u%d","timestamp":"2026-01-01T00:00:0%dZ","sessionId":"R","message":{"role":"user","content":%q}}`, i, i, text)
	}
	trace := line(1, "my token is "+secret) + "\n" + line(2, "thanks") + "\n"
	for _, tc := range []struct {
		name  string
		first []ingest.Option
	}{
		{"redacted", nil},
		{"first without redaction", []ingest.Option{ingest.WithoutRedaction()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.write("/src/R.jsonl", []byte(trace))
			sum := w.importAll([]string{"/src/R.jsonl"}, tc.first...)
			require.Equal(t, []ingest.Status{ingest.Created}, statuses(sum))
			id := sum.Results[0].ID
			data := func() string {
				var b strings.Builder
				for _, e := range w.events(id) {
					b.Write(e.Data)
				}
				return b.String()
			}
			require.Equal(t, tc.first == nil, !strings.Contains(data(), secret), data())

			sum = w.importAll([]string{"/src/R.jsonl"})
			require.Equal(t, []ingest.Status{ingest.Unchanged}, statuses(sum), sum.Results[0].Reason)

			w.write("/src/R.jsonl", []byte(trace+line(3, "and "+secret+" again")+"\n"))
			sum = w.importAll([]string{"/src/R.jsonl"})
			require.Equal(t, []ingest.Status{ingest.Appended}, statuses(sum), sum.Results[0].Reason)
			got := data()
			require.Equal(t, tc.first == nil, !strings.Contains(got, secret), got)
			require.Contains(t, got, `and [REDACTED:github-token] again`, "the events appended are redacted")
			require.Equal(t, 1, w.sessions())
		})
	}
}

// A sealed export is imported sealed as it is (the same recipients read
// it, nothing of it in clear in the store), and importing it again finds
// it unchanged; imported into zstd it is sealed in the zstd layout.
func TestImportSealedExport(t *testing.T) {
	ctx := t.Context()
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	w := newWorld(t, handle.WithIdentities(id))
	src := file.New(w.fs, "/elsewhere", handle.WithRecipients(id.Recipient()), handle.WithIdentities(id))
	h, err := src.Create(ctx)
	require.NoError(t, err)
	_, err = h.Append(ctx, eventlog.Event{Type: "user/message", Time: 1, Data: json.RawMessage(`{"text":"sealed words"}`)})
	require.NoError(t, err)
	require.NoError(t, h.Close())
	var out bytes.Buffer
	_, err = src.ExportSealed(ctx, h.ID(), &out, 0)
	require.NoError(t, err)
	w.write("/src/export.jsonl", out.Bytes())

	opts := []ingest.Option{ingest.WithSourceOptions(handle.WithIdentities(id))}
	sum := w.importAll([]string{"/src/export.jsonl"}, opts...)
	require.Equal(t, []ingest.Status{ingest.Created}, statuses(sum), sum.Results[0].Reason)
	info, err := w.st.Stat(ctx, h.ID())
	require.NoError(t, err)
	require.True(t, info.Sealed)
	b, err := afero.ReadFile(w.fs, info.Path)
	require.NoError(t, err)
	require.NotContains(t, string(b), "sealed words")
	require.Equal(t, `{"text":"sealed words"}`, string(w.events(h.ID())[0].Data))
	sum = w.importAll([]string{"/src/export.jsonl"}, opts...)
	require.Equal(t, []ingest.Status{ingest.Unchanged}, statuses(sum), sum.Results[0].Reason)

	sum = w.importAll([]string{"/src/export.jsonl"}) // no identity to read it with
	require.Equal(t, []ingest.Status{ingest.Failed}, statuses(sum))
	require.ErrorIs(t, sum.Results[0].Err, seal.ErrNoKey)

	// Into zstd (WithEncoding): sealed in the zstd layout, the same events.
	w2 := newWorld(t, handle.WithIdentities(id))
	w2.fs, w2.st = w.fs, file.New(w.fs, "/store2", handle.WithIdentities(id))
	sum = w2.importAll([]string{"/src/export.jsonl"}, append(opts, ingest.WithEncoding(handle.EncodingZstd))...)
	require.Equal(t, []ingest.Status{ingest.Created}, statuses(sum), sum.Results[0].Reason)
	info, err = w2.st.Stat(ctx, h.ID())
	require.NoError(t, err)
	require.True(t, info.Sealed)
	require.Equal(t, handle.EncodingZstd, info.Encoding)
	require.Equal(t, `{"text":"sealed words"}`, string(w2.events(h.ID())[0].Data))
}

// Regression: a SWE-agent trajectory records no times, and its sessions
// were placed at 1970 ("56y ago"). A new session of an untimed source
// starts at the file's modification time (events 1 ms apart); a file time
// before SWE-agent existed is not the trajectory's, and the import's own
// time is used; a copy of the file with another time is the same source,
// unchanged.
func TestImportUntimedPlaced(t *testing.T) {
	w := newWorld(t)
	src, _ := importertest.GenSWE(2)
	at := time.Date(2025, 5, 22, 10, 0, 0, 0, time.UTC)
	w.write("/a/run.traj", src)
	require.NoError(t, w.fs.Chtimes("/a/run.traj", at, at))
	r := w.importAll([]string{"/a/run.traj"}).Results[0]
	require.Equal(t, ingest.Created, r.Status, r.Reason)
	info, err := w.st.Stat(t.Context(), r.ID)
	require.NoError(t, err)
	require.Equal(t, at.UnixMilli(), info.Header.CreatedAt)
	for i, e := range w.events(r.ID) {
		require.Equal(t, at.UnixMilli()+int64(i), e.Time, "seq %d", i)
	}

	w.write("/b/copy.traj", src)
	later := at.Add(48 * time.Hour)
	require.NoError(t, w.fs.Chtimes("/b/copy.traj", later, later))
	require.Equal(t, ingest.Unchanged, w.importAll([]string{"/b/copy.traj"}).Results[0].Status)
	require.Equal(t, 1, w.sessions())

	other, _ := importertest.GenSWE(3)
	w.write("/c/old.traj", other)
	require.NoError(t, w.fs.Chtimes("/c/old.traj", time.Unix(0, 0), time.Unix(0, 0)))
	before := time.Now().UnixMilli()
	r = w.importAll([]string{"/c/old.traj"}).Results[0]
	info, err = w.st.Stat(t.Context(), r.ID)
	require.NoError(t, err)
	require.GreaterOrEqual(t, info.Header.CreatedAt, before, "a file time before SWE-agent's first release: the import's time")
	require.LessOrEqual(t, info.Header.CreatedAt, time.Now().UnixMilli())
}

// Regression: a zstd sessionlog file was imported as a raw session. A
// sessionlog file's session keeps the file's encoding unless
// WithEncoding says another; what it takes in the store is in the Result
// (from the store's Stat, never a second reading), with the argument it
// was found under.
func TestImportEncoding(t *testing.T) {
	w := newWorld(t)
	exp := file.New(w.fs, "/exp", handle.WithEncoding(handle.EncodingZstd))
	h, err := exp.Create(t.Context(), handle.WithLabels(map[string]string{"a": "b"}))
	require.NoError(t, err)
	_, err = h.Append(t.Context(), eventlog.Event{Type: "x", Time: 1, Data: json.RawMessage(`{"k":1}`)})
	require.NoError(t, err)
	require.NoError(t, h.Close())
	path := h.Path()
	require.True(t, strings.HasSuffix(path, ".jsonl.zst"), path)

	r := w.importAll([]string{"/exp"}).Results[0]
	require.Equal(t, ingest.Created, r.Status, r.Reason)
	require.Equal(t, handle.EncodingZstd, r.Encoding)
	require.Equal(t, "/exp", r.Arg)
	info, err := w.st.Stat(t.Context(), r.ID)
	require.NoError(t, err)
	require.Equal(t, handle.EncodingZstd, info.Encoding)
	require.Equal(t, info.SizeBytes, r.StoredBytes)

	w2 := newWorld(t)
	w2.fs = w.fs
	w2.st = file.New(w.fs, "/store2")
	r = w2.importAll([]string{path}, ingest.WithEncoding(handle.EncodingRaw)).Results[0]
	require.Equal(t, ingest.Created, r.Status, r.Reason)
	require.Equal(t, handle.EncodingRaw, r.Encoding, "asked for raw")
	require.Equal(t, path, r.Arg)
}

// TestImportGrownTrajectory: a SWE-agent trajectory is one JSON document
// that SWE-agent rewrites whole after each step, its history growing
// before its steps and its info replaced. Each save imported appends to
// the one session, in one AppendAll (a rollback of what the last import
// put after the part in common, then the rest of the new import); the
// session's live branch is a fresh import of the last save, every turn is
// closed, and one more import changes nothing, nor does an earlier save
// kept elsewhere. Regression: a grown trajectory (or an earlier save) made
// a second session with the same identity. Another run of
// the same task (the same history up to the model's first answer, then
// other steps) is a session of its own.
func TestImportGrownTrajectory(t *testing.T) {
	grown := 0
	for seed := uint64(0); grown < 4 && seed < 200; seed++ {
		saves, want := importertest.GenSWESaves(seed)
		if len(saves) < 3 {
			continue
		}
		grown++
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w := newWorld(t)
			calls := &countingStore{Store: w.st}
			imp := func() ingest.Result {
				sum, err := ingest.Import(t.Context(), calls, []string{"/src/run.traj"}, ingest.WithFs(w.fs))
				require.NoError(t, err)
				require.Len(t, sum.Results, 1)
				return sum.Results[0]
			}
			var id string
			for k, save := range saves {
				w.write("/src/run.traj", save)
				r := imp()
				if k == 0 {
					require.Equal(t, ingest.Created, r.Status, r.Reason)
					id = r.ID
					continue
				}
				require.Equal(t, ingest.Appended, r.Status, "save %d of %d: %s", k+1, len(saves), r.Reason)
				require.Equal(t, id, r.ID)
				require.Equal(t, k, calls.appendAll, "one AppendAll a grown save")
			}
			require.Equal(t, 1, calls.createFrom)
			require.Equal(t, 1, w.sessions())

			events := w.events(id)
			fresh, err := importer.Parse(t.Context(), swe.New(), bytes.NewReader(saves[len(saves)-1]), "/src/run.traj", importer.Config{})
			require.NoError(t, err)
			var wantRecords, gotRecords []string
			for _, e := range fresh.Events {
				if r, ok := importer.RecordOf("swe-agent", e); ok {
					wantRecords = append(wantRecords, string(r))
				}
			}
			for _, e := range live(events) {
				if r, ok := importer.RecordOf("swe-agent", e); ok {
					gotRecords = append(gotRecords, string(r))
				}
			}
			require.Equal(t, wantRecords, gotRecords, "the live branch holds every record of the last save, once")
			importertest.CheckCounts(t, want, importertest.SessionCounts(live(events)), "the grown session's live branch")
			importertest.CheckClosed(t, events)
			require.Equal(t, ingest.Unchanged, imp().Status)

			// An earlier save, kept elsewhere: its session holds it.
			w.write("/kept/run.traj", saves[0])
			sum, err := ingest.Import(t.Context(), calls, []string{"/kept/run.traj"}, ingest.WithFs(w.fs))
			require.NoError(t, err)
			require.Equal(t, []ingest.Status{ingest.Unchanged}, statuses(sum), sum.Results[0].Reason)
			require.Equal(t, id, sum.Results[0].ID)
			require.Contains(t, sum.Results[0].Reason, "an earlier copy")

			// Another run of the task: its second step is another one.
			var doc map[string]any
			require.NoError(t, json.Unmarshal(saves[1], &doc))
			history := doc["history"].([]any)
			for i := len(history) - 1; i >= 0; i-- {
				if m := history[i].(map[string]any); m["role"] == "assistant" {
					m["thought"] = "another thought"
					break
				}
			}
			other, err := json.Marshal(doc)
			require.NoError(t, err)
			w.write("/other/run.traj", other)
			sum, err = ingest.Import(t.Context(), calls, []string{"/other/run.traj"}, ingest.WithFs(w.fs))
			require.NoError(t, err)
			require.Equal(t, []ingest.Status{ingest.Created}, statuses(sum), sum.Results[0].Reason)
			require.NotEqual(t, id, sum.Results[0].ID)
		})
	}
	require.Equal(t, 4, grown, "seeds with runs of three steps or more")
}

// countingStore counts the creations and the batches an import asks of
// its store.
type countingStore struct {
	handle.Store
	createFrom, appendAll int
}

func (c *countingStore) CreateFrom(ctx context.Context, events iter.Seq2[eventlog.Event, error], opts ...handle.Option) (handle.Info, error) {
	c.createFrom++
	return c.Store.CreateFrom(ctx, events, opts...)
}

func (c *countingStore) AppendAll(ctx context.Context, id string, expected int64, events iter.Seq2[eventlog.Event, error]) (handle.Info, error) {
	c.appendAll++
	return c.Store.AppendAll(ctx, id, expected, events)
}
