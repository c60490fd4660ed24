package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

var keepShots = flag.String("shots", "", "keep the browser tests' screenshots in this folder (default: a temporary one)")

// tab is a headless Chromium tab that a test drives.
type tab struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

// newTab starts headless Chromium (the test skips without one, except
// under CI) with a window of width × height; it stops when the test ends.
func newTab(t *testing.T, width, height int) *tab {
	t.Helper()
	exe := browser(t)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, height))
	bctx, cancelB := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	t.Cleanup(func() { cancel(); cancelB(); cancelA() })
	shots := *keepShots
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	return &tab{t: t, ctx: ctx, shots: shots}
}

func (b *tab) do(a chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, a)
	require.NoError(b.t, err)
}

// text is the rendered text of the first element sel matches.
func (b *tab) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(b.t, err)
	return s
}

// waitFor waits until the JavaScript expression is true: the page's own
// state, not a sleep, says when it is done.
func (b *tab) waitFor(expr string) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(b.t, err, "waiting for %s", expr)
}

// shot saves a screenshot of the window as name and returns it.
func (b *tab) shot(name string) []byte {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(b.shots, name), png, 0o644))
	b.t.Logf("screenshot %s", filepath.Join(b.shots, name))
	return png
}

func evaluate[T any](b *tab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	require.NoError(b.t, err, expr)
	return v
}

// foldedCount is the number of records of type typ the page's folded
// runs stand for (each run says its count, a lone record counts one).
func foldedCount(typ string) string {
	return `[...document.querySelectorAll(".item.k-other")]
		.filter(e => e.querySelector("summary code").textContent === ` + strconv.Quote(typ) + `)
		.map(e => { const c = e.querySelector("summary .count"); return c ? parseInt(c.textContent.replace(/[×,]/g, ""), 10) : 1; })
		.reduce((a, b) => a + b, 0)`
}

// TestServeClaudeSessionInABrowser imports a real Claude Code session and
// reads it in the browser: the conversation is there to read, and its
// foreign records (hook progress, file snapshots) are folded into runs
// whose counts add up to the records of the log, one line each; a click
// opens a run, another the records as stored.
func TestServeClaudeSessionInABrowser(t *testing.T) {
	t.Parallel()
	b := newTab(t, 1200, 1400)
	dir, imports := importedTraces(t) // the first is a Claude Code transcript
	require.Equal(t, "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", foreignTraces()[0].file)
	require.Equal(t, 0, imports[0].res.code, imports[0].res.stderr)
	main := imports[0].lines[0].ID
	u := startServe(t, dir)
	base := "http://" + u.Host
	b.do(chromedp.Navigate(u.String())) // the token, then kept in a cookie

	// The first page, seqs 0-399: the first turn's prompt, the answers.
	b.do(chromedp.Navigate(base + "/s/" + main + "?before=400"))
	b.do(chromedp.WaitVisible(chromedp.CSS(`#turn-6`)))
	require.Contains(t, b.text(`#turn-6 h2`), "turn 1")
	require.Contains(t, b.text(`#seq-7 .msg.user pre`), "Work on bead spotter-dov.")
	require.Greater(t, evaluate[int](b, `document.querySelectorAll(".item.k-assistant").length`), 10)
	require.Greater(t, evaluate[int](b, `document.querySelectorAll(".item.k-call").length`), 20)

	// Every record the conversation has no words for is in a folded run,
	// and the runs' counts add up to the records of the page's seqs.
	for _, typ := range []string{"claude/progress", "claude/file-history-snapshot"} {
		cat := logtool(t, "", "--dir", dir, "cat", "--json", "--from", "0", "--to", "399", "--type", typ, main)
		require.Equal(t, 0, cat.code, cat.stderr)
		records := strings.Count(cat.stdout, "\n")
		require.Positive(t, records, typ)
		require.Equal(t, records, evaluate[int](b, foldedCount(typ)), typ)
	}
	runs := evaluate[int](b, `document.querySelectorAll(".item.k-other").length`)
	progress := evaluate[int](b, foldedCount("claude/progress"))
	require.Less(t, runs*3, progress, "%d lines for %d progress records: not folded", runs, progress)
	// Folded means one line each, closed.
	tallest := evaluate[float64](b, `Math.max(...[...document.querySelectorAll(".item.k-other")].map(e => e.getBoundingClientRect().height))`)
	line := evaluate[float64](b, `document.querySelector(".item.k-call").getBoundingClientRect().height`)
	require.LessOrEqual(t, tallest, line+1, "a folded run takes one line")
	require.Zero(t, evaluate[int](b, `document.querySelectorAll("details.other[open]").length`))
	b.shot("claude-session.png")

	// The largest run opens on a click: the first record, indented, and a
	// link to every record of the run as stored.
	b.do(chromedp.Evaluate[chromedp.Void](`(() => {
		const runs = [...document.querySelectorAll(".item.k-other")].filter(e => e.querySelector("summary .count"));
		const n = e => parseInt(e.querySelector("summary .count").textContent.replace(/[×,]/g, ""), 10);
		runs.sort((a, b) => n(b) - n(a));
		runs[0].id = "the-largest-run";
		runs[0].scrollIntoView();
	})()`))
	count := b.text(`#the-largest-run summary .count`)
	b.do(chromedp.Click(chromedp.CSS(`#the-largest-run summary`)))
	b.do(chromedp.WaitVisible(chromedp.CSS(`#the-largest-run details[open] pre`)))
	require.Contains(t, b.text(`#the-largest-run pre`), `"parentUuid": `)
	n := strings.NewReplacer("×", "", ",", "").Replace(count)
	require.Contains(t, b.text(`#the-largest-run details p`), "the first of "+n+" records in a row")
	b.shot("claude-run-open.png")
	b.do(chromedp.Click(chromedp.CSS(`#the-largest-run details p a`)))
	b.do(chromedp.WaitVisible(chromedp.CSS(`.raw`)))
	want, _ := strconv.Atoi(n)
	require.Equal(t, min(want, 100), evaluate[int](b, `document.querySelectorAll(".raw").length`))
	require.Equal(t, min(want, 100), evaluate[int](b, `[...document.querySelectorAll(".raw h2 code")].filter(c => c.textContent === "claude/progress").length`))
	b.shot("claude-run-as-stored.png")

	// The last page: the session's end, its last turn first.
	b.do(chromedp.Navigate(base + "/s/" + main))
	b.do(chromedp.WaitVisible(chromedp.CSS(`#turns > section`)))
	require.Contains(t, b.text(`#facts`), "1,935 events")
	require.Contains(t, b.text(`#chart figcaption`), "its height: its tokens (in + out)")
	b.shot("claude-session-end.png")
}

// TestServeLivePageInABrowser writes a turn into a session while its page
// is open: the streamed text shows as it grows, in its turn; the step's
// end makes it the turn's message; the next turn comes first; the
// heading's count and the chart follow every write.
func TestServeLivePageInABrowser(t *testing.T) {
	t.Parallel()
	b := newTab(t, 1100, 800)
	ctx := t.Context()
	dir := t.TempDir()
	st := file.New(afero.NewOsFs(), dir)
	w, err := st.Create(ctx, handle.WithLabels(map[string]string{"agent": "storyteller"}))
	require.NoError(t, err)
	defer w.Close()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixMilli()
	write := func(events ...[2]string) {
		t.Helper()
		for _, e := range events {
			at += 900
			_, err := w.Append(ctx, eventlog.Event{Type: e[0], Time: at, Data: json.RawMessage(e[1])})
			require.NoError(t, err)
		}
		require.NoError(t, w.Flush(ctx))
	}
	write([2]string{"turn/start", `{}`}, [2]string{"user/message", `{"text":"Tell me a story."}`},
		[2]string{"step/start", `{}`}, [2]string{"assistant/chunk", `{"text":"Once "}`})
	u := startServe(t, dir)
	b.do(chromedp.Navigate(u.String()))
	b.do(chromedp.Navigate("http://" + u.Host + "/s/" + w.ID()))
	b.do(chromedp.WaitVisible(chromedp.CSS(`#held`)))
	require.Equal(t, "Once ", evaluate[string](b, `document.querySelector("#turn-0 #held .k-assistant pre").textContent`))
	require.Equal(t, "4 events", b.text(`#events`))

	// The stream goes on: the same message grows, the count follows.
	write([2]string{"assistant/chunk", `{"text":"upon "}`}, [2]string{"assistant/chunk", `{"text":"a time, "}`},
		[2]string{"assistant/chunk", `{"text":"a log "}`}, [2]string{"assistant/chunk", `{"text":"was written."}`})
	b.waitFor(`document.querySelector("#held .k-assistant pre")?.textContent === "Once upon a time, a log was written."`)
	require.Equal(t, "8 events", b.text(`#events`))
	require.Contains(t, b.text(`#held .k-assistant .note`), "streamed: 5 chunks; the step has not ended")
	require.Equal(t, 1, evaluate[int](b, `document.querySelectorAll(".item.k-assistant").length`), "one message, not a row a chunk")
	b.shot("live-streaming.png")

	// The step and the turn end, the next begins: the story is the first
	// turn's message, the new turn comes first, streaming its own text.
	write([2]string{"step/end", `{}`}, [2]string{"usage", `{"inputTokens":1200,"outputTokens":40,"costMicros":3100}`},
		[2]string{"turn/end", `{"kind":"completed"}`}, [2]string{"turn/start", `{}`},
		[2]string{"user/message", `{"text":"And then?"}`}, [2]string{"step/start", `{}`}, [2]string{"assistant/chunk", `{"text":"It was "}`})
	b.waitFor(`document.querySelector("#turns > section")?.id === "turn-11"`)
	b.waitFor(`document.querySelector("#turn-11 #held .k-assistant pre")?.textContent === "It was "`)
	require.Equal(t, "15 events", b.text(`#events`))
	require.Equal(t, "Once upon a time, a log was written.", evaluate[string](b, `document.querySelector("#turn-0 .branch > .k-assistant:not(.held) pre").textContent`))
	require.Contains(t, b.text(`#turn-0 h2`), "1,240 tokens · $0.0031 · completed")
	require.Contains(t, b.text(`#turn-11 h2`), "turn 2")
	require.Contains(t, b.text(`#turn-11 .k-user pre`), "And then?")
	require.Contains(t, b.text(`#usage`), "usage in total: 1,200 in · 40 out · $0.0031")
	require.Equal(t, 2, evaluate[int](b, `document.querySelectorAll("#chart rect").length`))
	require.Zero(t, evaluate[int](b, `document.querySelectorAll("#turns > :not(section)").length`), "every item in its turn")
	require.Equal(t, []int{1, 1}, evaluate[[]int](b, `["#turn-0", "#turn-11"].map(s => document.querySelectorAll(s + " .k-user").length)`))
	b.shot("live-next-turn.png")
}
