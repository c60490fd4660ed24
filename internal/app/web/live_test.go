package web_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/app/web"
)

// followURL is the live view's URL of a session page.
func followURL(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`data-follow="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m, "the page does not follow the log")
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// follow opens the live view at target over a real connection (with a
// Last-Event-ID when lastID is not ""), checks that it is a stream, and
// returns its lines, after the first; it ends with the test.
func follow(t *testing.T, h http.Handler, target, lastID string) *bufio.Scanner {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+target, nil)
	require.NoError(t, err)
	req.Host = addr
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	require.True(t, lines.Scan())
	require.Equal(t, ": following", lines.Text())
	return lines
}

// TestLiveFollowsTheTurn writes a turn while the live view follows it:
// the streamed text shows as it grows, then as the step's message in its
// turn; a new turn comes first; the heading's count is current at each
// message; a rollback asks the page to reload.
func TestLiveFollowsTheTurn(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, "/s")
	w, err := st.Create(ctx)
	require.NoError(t, err)
	write := func(evs ...eventlog.Event) {
		t.Helper()
		_, err := w.Append(ctx, evs...)
		require.NoError(t, err)
		require.NoError(t, w.Flush(ctx))
	}
	write(ev("turn/start", `{}`), ev("user/message", `{"text":"tell me"}`), ev("step/start", `{}`), ev("assistant/chunk", `{"text":"Once "}`))

	srv, err := web.New(file.New(afero.NewReadOnlyFs(fsys), "/s"), addr, web.WithToken(token), web.WithFollowEvery(time.Millisecond))
	require.NoError(t, err)
	f := &fixture{handler: srv.Handler()}
	page := f.get(t, "/s/"+w.ID()).Body.String()
	// The streamed text of the open step is on the page, marked as still
	// growing, in its turn.
	require.Contains(t, page, `<div id="held" class="held"><div class="item k-assistant held" id="seq-3"`)
	require.Contains(t, page, "streamed: 1 chunk; the step has not ended</span></b><pre>Once </pre>")

	lines := follow(t, f.handler, followURL(t, page), "")

	// More chunks: the text grows in place; nothing is added yet.
	write(ev("assistant/chunk", `{"text":"upon "}`), ev("assistant/chunk", `{"text":"a time"}`))
	id, u := nextUpdate(t, lines)
	require.Equal(t, "5", id)
	require.Equal(t, "turn-0", u.HeldIn)
	require.Contains(t, u.Held, "streamed: 3 chunks; the step has not ended</span></b><pre>Once upon a time</pre>")
	require.Len(t, u.Groups, 1)
	require.Empty(t, u.Groups[0].Items)
	require.Contains(t, u.Facts, `<span id="events">6 events</span>`)

	// The step ends: its text is the step's message, at the end of its
	// turn, and nothing grows any more.
	write(ev("step/end", `{}`))
	_, u = nextUpdate(t, lines)
	require.Empty(t, u.Held)
	require.Equal(t, "turn-0", u.Groups[0].ID)
	require.Contains(t, u.Groups[0].Items, `<div class="item k-assistant" id="seq-3"`)
	require.Contains(t, u.Groups[0].Items, "streamed: 3 chunks</span></b><pre>Once upon a time</pre>")
	require.Contains(t, u.Facts, `<span id="events">7 events</span>`)

	// Runs of foreign records grow in place too.
	write(ev("x/progress", `{"n":1}`), ev("x/progress", `{"n":2}`))
	_, u = nextUpdate(t, lines)
	require.Contains(t, u.Held, `<code>x/progress</code> <b class="count">×2</b>`)

	// The turn ends, the next one starts: the run is shown in the first
	// turn, the new turn whole, on its own, with its heading.
	write(ev("usage", `{"inputTokens":1000,"outputTokens":20}`), ev("turn/end", `{"kind":"completed"}`),
		ev("turn/start", `{}`), ev("user/message", `{"text":"and then?"}`))
	_, u = nextUpdate(t, lines)
	require.Len(t, u.Groups, 2)
	require.Equal(t, "turn-0", u.Groups[0].ID)
	require.Contains(t, u.Groups[0].Items, `<code>x/progress</code> <b class="count">×2</b>`)
	require.Contains(t, u.Groups[0].Items, "usage: 1,000 in · 20 out")
	require.Contains(t, u.Groups[0].Head, "1,020 tokens · completed")
	require.Equal(t, "turn-11", u.Groups[1].ID)
	require.Contains(t, u.Groups[1].Section, `<section class="turn" id="turn-11">`)
	require.Contains(t, u.Groups[1].Section, "<h2>turn 2 ")
	require.Contains(t, u.Groups[1].Section, "and then?")
	require.Contains(t, u.Usage, "usage in total: 1,000 in · 20 out")
	require.Equal(t, 2, strings.Count(u.Chart, "<rect "))
	require.Contains(t, u.Pager, "showing seqs 0–12")

	// A rollback: earlier items change meaning, the page reloads.
	write(ev("rollback", `{"to":10}`))
	_, u = nextUpdate(t, lines)
	require.True(t, u.Reload)
}

// TestLiveGoesOnFromLastEventID: a browser that reconnects gets what came
// after the last message it had, in the turn it belongs to.
func TestLiveGoesOnFromLastEventID(t *testing.T) {
	f := newFixture(t, web.WithFollowEvery(time.Millisecond))
	h, err := f.store.Open(t.Context(), f.fork, handle.ReadWrite)
	require.NoError(t, err)
	for i := range 3 {
		_, err = h.Append(t.Context(), ev("user/message", fmt.Sprintf(`{"text":"m%d"}`, i)))
		require.NoError(t, err)
	}
	require.NoError(t, h.Close())
	id, u := nextUpdate(t, follow(t, f.handler, "/s/"+f.fork+"/live?from=0&after=10", "12"))
	require.Equal(t, "13", id)
	require.Len(t, u.Groups, 1)
	require.Equal(t, "turn-9", u.Groups[0].ID)
	require.Contains(t, u.Groups[0].Items, "m2")
	require.NotContains(t, u.Groups[0].Items, "m1")
}

// TestLiveAcrossConvertAndCut: the live view follows the session, not the
// file (package follow): a convert moves the log to another name and the
// page goes on with what is written after it; a log cut under the page
// (a repair, a writer's recovery) asks the page to reload, since events
// it shows may be gone.
func TestLiveAcrossConvertAndCut(t *testing.T) {
	ctx := t.Context()
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, "/s")
	w, err := st.Create(ctx)
	require.NoError(t, err)
	id := w.ID()
	appendFlush := func(w handle.Handle, evs ...eventlog.Event) {
		t.Helper()
		_, err := w.Append(ctx, evs...)
		require.NoError(t, err)
		require.NoError(t, w.Flush(ctx))
	}
	appendFlush(w, ev("turn/start", `{}`), ev("user/message", `{"text":"one"}`))
	require.NoError(t, w.Close())

	srv, err := web.New(file.New(afero.NewReadOnlyFs(fsys), "/s"), addr, web.WithToken(token), web.WithFollowEvery(time.Millisecond))
	require.NoError(t, err)
	f := &fixture{handler: srv.Handler()}
	lines := follow(t, f.handler, followURL(t, f.get(t, "/s/"+id).Body.String()), "")

	require.NoError(t, st.Convert(ctx, id, handle.EncodingZstd))
	w, err = st.Open(ctx, id, handle.ReadWrite)
	require.NoError(t, err)
	appendFlush(w, ev("user/message", `{"text":"after the convert"}`))
	require.NoError(t, w.Close())
	seq, u := nextUpdate(t, lines)
	require.Equal(t, "2", seq)
	require.False(t, u.Reload)
	require.Contains(t, u.Groups[0].Items, "after the convert")

	require.NoError(t, st.Convert(ctx, id, handle.EncodingRaw))
	path := "/s/" + id + ".jsonl"
	b, err := afero.ReadFile(fsys, path)
	require.NoError(t, err)
	rows := strings.SplitAfter(string(b), "\n")
	require.NoError(t, afero.WriteFile(fsys, path, []byte(strings.Join(rows[:2], "")), 0o600)) // the header and seq 0
	_, u = nextUpdate(t, lines)
	require.True(t, u.Reload, "the events the page shows past seq 0 are gone")
}
