package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write docs/serve.png from the browser test")

// serveStore writes a store for the serve tests: a session with a tool
// call whose result holds markup, a rollback, and a fork of it.
func serveStore(t *testing.T) (dir, main, fork string) {
	t.Helper()
	ctx := t.Context()
	dir = t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	h, err := st.Create(ctx, handle.WithLabels(map[string]string{"agent": "coder", "title": "fix the tests"}))
	require.NoError(t, err)
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC).UnixMilli()
	ev := func(typ, data string) eventlog.Event {
		at += 1700
		return eventlog.Event{Type: typ, Time: at, Data: json.RawMessage(data)}
	}
	_, err = h.Append(ctx,
		ev("turn/start", `{}`),
		ev("user/message", `{"text":"Why does TestParse fail?"}`),
		ev("step/start", `{}`),
		ev("assistant/reasoning", `{"text":"Read the test first."}`),
		ev("tool/call", `{"id":"c1","name":"read_file","args":{"path":"parse_test.go"}}`),
		ev("tool/result", `{"id":"c1","output":"<script>window.pwned=1</script> func TestParse(t *testing.T) {…}"}`),
		ev("assistant/message", `{"text":"The test expects a trailing newline."}`),
		ev("usage", `{"inputTokens":1200,"outputTokens":80,"costMicros":4200,"model":"m1"}`),
		ev("step/end", `{}`),
		ev("turn/end", `{"kind":"completed"}`), // 9
		ev("turn/start", `{}`),
		ev("user/message", `{"text":"Rewrite the parser."}`),
		ev("step/start", `{}`),
		ev("assistant/message", `{"text":"Rewriting everything."}`),
		ev("usage", `{"inputTokens":1500,"outputTokens":900,"costMicros":9100,"model":"m1"}`),
		ev("step/end", `{}`),
		ev("turn/end", `{"kind":"completed"}`),
		ev("rollback", `{"to":9,"reason":"too big a change"}`), // 17
		ev("turn/start", `{}`),
		ev("user/message", `{"text":"Just add the newline."}`),
		ev("step/start", `{}`),
		ev("assistant/message", `{"text":"Done: one line changed."}`),
		ev("usage", `{"inputTokens":1400,"outputTokens":40,"costMicros":3900,"model":"m1"}`),
		ev("step/end", `{}`),
		ev("turn/end", `{"kind":"completed"}`),
	)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	fk, err := st.Fork(ctx, h.ID(), 9, handle.WithLabels(map[string]string{"agent": "coder", "title": "try the other fix"}))
	require.NoError(t, err)
	_, err = fk.Append(ctx, ev("turn/start", `{}`), ev("user/message", `{"text":"Make the test accept both."}`))
	require.NoError(t, err)
	require.NoError(t, fk.Close())
	return dir, h.ID(), fk.ID()
}

// startServe runs `logtool serve` in-process on dir and returns the URL it
// printed; the server stops when the test ends.
func startServe(t *testing.T, dir string, flags ...string) *url.URL {
	t.Helper()
	return startServeOn(t, append([]string{"--dir", dir}, flags...)...)
}

// startServeOn runs `logtool serve` in-process with the global flags
// given (the store: --dir D or --store URL; keys) and returns the URL it
// printed.
func startServeOn(t *testing.T, store ...string) *url.URL {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		done <- run(ctx, append(store, "serve"), strings.NewReader(""), pw, &errOut, func(string) string { return "" })
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		require.Equal(t, 0, <-done, errOut.String())
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err, errOut.String())
	go io.Copy(io.Discard, pr)
	u, err := url.Parse(strings.TrimSpace(line))
	require.NoError(t, err)
	require.Equal(t, "http", u.Scheme)
	require.True(t, strings.HasPrefix(u.Host, "127.0.0.1:"), "loopback by default: %s", u.Host)
	require.Len(t, u.Query().Get("token"), 32)
	return u
}

// apiGet fetches path from the server with its token.
func apiGet(t *testing.T, u *url.URL, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+u.Host+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+u.Query().Get("token"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestServeAPIIsTheCLIOutput: /api/ answers with the bytes the commands
// print.
func TestServeAPIIsTheCLIOutput(t *testing.T) {
	dir, main, fork := serveStore(t)
	u := startServe(t, dir)
	tests := []struct {
		path string
		args []string
	}{
		{"/api/ls", []string{"ls", "--json"}},
		{"/api/tree", []string{"ls", "--tree", "--json"}},
		{"/api/stat/" + main, []string{"stat", "--json", main}},
		{"/api/stat/" + fork, []string{"stat", "--json", fork}},
		{"/api/verify/" + main, []string{"verify", "--json", main}},
		{"/api/replay/" + main + "?projection=agent", []string{"replay", "--projection", "agent", main}},
		{"/api/replay/" + fork + "?projection=transcript", []string{"replay", "--projection", "transcript", fork}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, body := apiGet(t, u, tt.path)
			require.Equal(t, http.StatusOK, code, body)
			cli := logtool(t, "", append([]string{"--dir", dir}, tt.args...)...)
			require.Equal(t, 0, cli.code, cli.stderr)
			require.Equal(t, cli.stdout, body)
		})
	}
}

// TestServeSaysWhatWasRedacted: serve's session page says what redaction
// at write replaced in the words show prints (one Builder), its page of
// the events as stored and its API answer with what the CLI prints (the
// record as data, for cat --json; the markers in the replayed state), and
// the secret is in none of them.
func TestServeSaysWhatWasRedacted(t *testing.T) {
	const awsKey, note = "AKIAQYLPMN5HHHFPZAM2", "redacted: output (aws-access-key-id)"
	dir := t.TempDir()
	id := toolSession(t, dir, "AWS_ACCESS_KEY_ID="+awsKey)
	show := logtool(t, "", "--dir", dir, "show", id)
	require.Equal(t, 0, show.code, show.stderr)
	require.Contains(t, show.stdout, "        "+note+"\n")

	u := startServe(t, dir)
	code, page := apiGet(t, u, "/s/"+id)
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, `<p class="redacted" role="note">`+note+`</p>`, "the words show prints")
	require.NotContains(t, page, "$redacted")
	code, stored := apiGet(t, u, "/s/"+id+"/events?from=1")
	require.Equal(t, http.StatusOK, code, stored)
	require.Contains(t, stored, "&#34;$redacted&#34;: [", "as stored, the record is data")
	cat := logtool(t, "", "--dir", dir, "cat", "--json", "--from", "1", id)
	require.Equal(t, 0, cat.code, cat.stderr)
	require.Contains(t, cat.stdout, `"$redacted":[{"path":["output"],"kinds":["aws-access-key-id"]}]`)
	code, state := apiGet(t, u, "/api/replay/"+id+"?projection=transcript")
	require.Equal(t, http.StatusOK, code, state)
	cli := logtool(t, "", "--dir", dir, "replay", "--projection", "transcript", id)
	require.Equal(t, 0, cli.code, cli.stderr)
	require.Equal(t, cli.stdout, state)
	for _, out := range []string{show.stdout, page, stored, cat.stdout, state} {
		require.NotContains(t, out, awsKey)
	}
}

// TestServeLeavesTheStoreAsItWas: the server reads through a read-only
// file system, so not even a derived file appears.
func TestServeLeavesTheStoreAsItWas(t *testing.T) {
	dir, main, fork := serveStore(t)
	before := treeOf(t, dir)
	u := startServe(t, dir)
	for _, p := range []string{"/", "/?sort=tree", "/s/" + main, "/s/" + fork, "/diff?a=" + main + "&b=" + fork,
		"/s/" + main + "/verify", "/api/ls", "/api/tree", "/api/stat/" + main, "/api/verify/" + fork, "/api/replay/" + main} {
		code, body := apiGet(t, u, p)
		require.Equal(t, http.StatusOK, code, "%s: %s", p, body)
	}
	require.Equal(t, before, treeOf(t, dir))
}

// TestServeJetStream: serve works on a JetStream store too (--store, any
// seeds): its pages and its /api/ answer as on a folder, the API with the
// bytes the commands print on that store, and nothing is written to the
// stream or its buckets. (The store is opened read-only, so that no page
// could write: storeurl's TestOpenReadOnly shows each write refused.)
func TestServeJetStream(t *testing.T) {
	dir, main, fork := serveStore(t)
	s := natstest.Run(t)
	store := "nats://" + s.Addr().String() + "/serve?sync=always"
	res := logtool(t, "", "copy", dir, store)
	require.Equal(t, 0, res.code, res.stderr)
	nc, err := nats.Connect(s.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	state := func() map[string]natsjs.StreamState {
		out := map[string]natsjs.StreamState{}
		for info := range js.ListStreams(t.Context()).Info() {
			out[info.Config.Name] = info.State
		}
		return out
	}
	before := state()
	u := startServeOn(t, "--store", store)
	for _, p := range []string{"/", "/?sort=tree", "/s/" + main, "/s/" + fork, "/s/" + main + "/events", "/diff?a=" + main + "&b=" + fork,
		"/s/" + main + "/verify", "/api/tree", "/api/verify/" + fork, "/api/replay/" + fork + "?projection=transcript"} {
		code, body := apiGet(t, u, p)
		require.Equal(t, http.StatusOK, code, "%s: %s", p, body)
	}
	for _, tt := range []struct {
		path string
		args []string
	}{
		{"/api/ls", []string{"ls", "--json"}},
		{"/api/stat/" + main, []string{"stat", "--json", main}},
		{"/api/replay/" + main + "?projection=agent", []string{"replay", "--projection", "agent", main}},
	} {
		code, body := apiGet(t, u, tt.path)
		require.Equal(t, http.StatusOK, code, body)
		cli := logtool(t, "", append([]string{"--store", store}, tt.args...)...)
		require.Equal(t, 0, cli.code, cli.stderr)
		require.Equal(t, cli.stdout, body, tt.path)
	}
	require.Equal(t, before, state(), "nothing written to the store")
}

// treeOf returns every file under dir with its bytes.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}

// browser finds Chromium: a test that needs one skips without it, except
// under CI, where .ci/run installs it.
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium on PATH under CI (.ci/run installs Debian's chromium)")
	}
	t.Skip("no Chromium on PATH (apt-get install chromium)")
	return ""
}

// TestServeInABrowser drives headless Chromium through the pages:
// the list loads, a session shows its conversation (markup in a tool
// result as text), a rollback's abandoned branch is marked, the diff shows
// where the fork parts, an event appended while the page is open appears
// in its turn.
func TestServeInABrowser(t *testing.T) {
	t.Parallel()
	b := newTab(t, 1100, 760)
	dir, main, fork := serveStore(t)
	u := startServe(t, dir)
	base := "http://" + u.Host

	// The list: both sessions, the fork under its parent, stop and
	// verdict filled in from /api/stat.
	b.do(chromedp.Navigate(u.String() + "&sort=tree"))
	b.do(chromedp.WaitVisible(chromedp.CSS(`tr.session td.verdict[title]`)))
	require.Contains(t, b.text(`tr.depth-0 td.id`), main)
	require.Contains(t, b.text(`tr.depth-1 td.id`), fork)
	require.Equal(t, "completed", b.text(`tr.depth-0 td.stop`))
	require.Equal(t, "may continue", b.text(`tr.depth-0 td.verdict`))
	b.shot("list.png")

	// The session: its conversation, the tool result's markup as text.
	b.do(chromedp.Navigate(base + "/s/" + main))
	b.do(chromedp.WaitVisible(chromedp.CSS(`#seq-19`)))
	require.Contains(t, b.text(`#seq-19`), "Just add the newline.")
	require.Contains(t, b.text(`#seq-21`), "Done: one line changed.")
	// Usage: the live branch's in total, and what the abandoned one spent.
	require.Contains(t, b.text(`.usage-total`), "usage in total: 2,600 in · 120 out · $0.0081")
	require.Contains(t, b.text(`.usage-total`), "spent with the abandoned branches: 4,100 in · 1,020 out · $0.0172")
	readme := b.shot("session.png")
	b.do(chromedp.Click(chromedp.CSS(`#seq-5 summary`)))
	require.Contains(t, b.text(`#seq-5 pre`), "<script>window.pwned=1</script>")
	require.False(t, evaluate[bool](b, `window.pwned === 1`), "a tool result's <script> ran")
	// The rollback's abandoned branch is marked; the live branch is not.
	// Seqs 10..16 are abandoned: the turn's heading, its message, answer,
	// usage and stop (step markers show nothing), and the branch's marker.
	require.Equal(t, 5, evaluate[int](b, `document.querySelectorAll(".item.abandoned").length`))
	require.Equal(t, "item k-user abandoned|item k-user", evaluate[string](b, `document.getElementById("seq-11").className + "|" + document.getElementById("seq-19").className`))
	require.Contains(t, b.text(`#seq-17`), "rollback to seq 9")
	b.shot("session-call.png")

	// Live: an event appended while the page is open appears at the end of
	// its turn, and the count follows.
	st := file.New(afero.NewOsFs(), dir)
	h, err := st.Open(t.Context(), main, handle.ReadWrite)
	require.NoError(t, err)
	_, err = h.Append(t.Context(), eventlog.Event{Type: "user/message", Time: time.Now().UnixMilli(), Data: json.RawMessage(`{"text":"appended <b>live</b>"}`)})
	require.NoError(t, err)
	require.NoError(t, h.Close())
	b.do(chromedp.WaitVisible(chromedp.CSS(`#turn-18 #seq-25`)))
	require.Contains(t, b.text(`#seq-25`), "appended <b>live</b>")
	require.Equal(t, "26 events", b.text(`#events`))
	b.shot("live.png")

	// The diff of the fork and its parent: where they part, what each did.
	b.do(chromedp.Navigate(base + "/diff?a=" + main + "&b=" + fork))
	b.do(chromedp.WaitVisible(chromedp.CSS(`#parts`)))
	require.Equal(t, "10 events in common; they part at seq 10 of A (seq 10 of B)", b.text(`#parts`))
	require.Contains(t, b.text(`.side:nth-child(1)`), "Rewrite the parser.")
	require.Contains(t, b.text(`.side:nth-child(2)`), "Make the test accept both.")
	b.shot("diff.png")

	// Verify on demand.
	b.do(chromedp.Navigate(base + "/s/" + fork + "/verify"))
	b.do(chromedp.WaitVisible(chromedp.CSS(`#result`)))
	require.True(t, strings.HasPrefix(b.text(`#result`), "ok: "), b.text(`#result`))
	b.shot("verify.png")

	if *updateScreenshot {
		require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", "serve.png"), readme, 0o644))
	}
}

func TestServeBadAddr(t *testing.T) {
	for _, addr := range []string{"nonsense", "127.0.0.1:99999", "256.0.0.1:0"} {
		res := logtool(t, "", "--dir", t.TempDir(), "serve", "--addr", addr)
		require.Equal(t, exitUsage, res.code, addr)
		require.Contains(t, res.stderr, "listen on", addr)
		require.Empty(t, res.stdout, addr)
	}
}

// TestServeRealTraces imports the real traces and opens every page of
// every session: the conversation is there, verify says ok, and the only
// script on a page is the server's own.
func TestServeRealTraces(t *testing.T) {
	t.Parallel()
	dir, imports := importedTraces(t)
	var ids []string
	for _, imp := range imports {
		require.Equal(t, 0, imp.res.code, imp.res.stderr)
		for _, l := range imp.lines {
			ids = append(ids, l.ID)
		}
	}
	u := startServe(t, dir)
	code, list := apiGet(t, u, "/?sort=tree")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, list, "of "+strconv.Itoa(len(ids))+" sessions")
	for _, id := range ids {
		require.Contains(t, list, `data-id="`+id+`"`)
		code, page := apiGet(t, u, "/s/"+id)
		require.Equal(t, http.StatusOK, code, page)
		require.Regexp(t, `class="item k-(user|assistant|call)`, page, id)
		require.Less(t, strings.Count(page, `class="item k-chunk`), 20, "%s: streamed chunks are folded", id)
		require.Equal(t, 1, strings.Count(strings.ToLower(page), "<script"), id)
		code, v := apiGet(t, u, "/s/"+id+"/verify")
		require.Equal(t, http.StatusOK, code, v)
		require.Contains(t, v, `id="result">ok: `, id)
	}
}
