package web_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io/fs"
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
	"github.com/sessionlog/sessionlog/ops/inspect"
	"github.com/sessionlog/sessionlog/ops/verify"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

const (
	token = "t0ken"
	addr  = "127.0.0.1:8123"
)

// fixture is a store with a session holding hostile text, a rollback, and
// a fork of it.
type fixture struct {
	fs          afero.Fs
	store       *file.Store
	main, fork  string
	rollbackSeq int64
	srv         *web.Server
	handler     http.Handler
}

func ev(typ, data string) eventlog.Event {
	return eventlog.Event{Type: typ, Time: 1764450000000, Data: json.RawMessage(data)}
}

// oneSession writes a store of one session holding evs (in a file store
// made with opts) and serves it read-only, as logtool serve does.
func oneSession(t *testing.T, evs []eventlog.Event, opts ...handle.Option) (f *fixture, id string) {
	t.Helper()
	fsys := afero.NewMemMapFs()
	h, err := file.New(fsys, "/s", opts...).Create(t.Context())
	require.NoError(t, err)
	_, err = h.Append(t.Context(), evs...)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	srv, err := web.New(file.New(afero.NewReadOnlyFs(fsys), "/s"), addr, web.WithToken(token))
	require.NoError(t, err)
	return &fixture{fs: fsys, srv: srv, handler: srv.Handler()}, h.ID()
}

func newFixture(t *testing.T, opts ...web.Option) *fixture {
	t.Helper()
	ctx := t.Context()
	f := &fixture{fs: afero.NewMemMapFs()}
	f.store = file.New(f.fs, "/s")
	h, err := f.store.Create(ctx, handle.WithLabels(map[string]string{"agent": "coder", "title": "<b>bold</b>"}))
	require.NoError(t, err)
	_, err = h.Append(ctx,
		ev("turn/start", `{}`), // 0
		ev("user/message", `{"text":"list <script>alert(1)</script> files"}`), // 1
		ev("step/start", `{}`),                              // 2
		ev("assistant/reasoning", `{"text":"think first"}`), // 3
		ev("tool/call", `{"id":"c1","name":"ls","args":{"path":"<img src=x onerror=alert(2)>"}}`), // 4
		ev("tool/result", `{"id":"c1","output":"<script>alert(3)</script>"}`),                     // 5
		ev("usage", `{"inputTokens":100,"outputTokens":7,"costMicros":1500}`),                     // 6
		ev("step/end", `{}`),                                    // 7
		ev("turn/end", `{"kind":"completed"}`),                  // 8
		ev("turn/start", `{}`),                                  // 9
		ev("user/message", `{"text":"the abandoned question"}`), // 10
		ev("turn/end", `{"kind":"completed"}`),                  // 11
		ev("rollback", `{"to":8,"reason":"back"}`),              // 12
		ev("turn/start", `{}`),                                  // 13
		ev("user/message", `{"text":"the live question"}`),      // 14
		ev("turn/end", `{"kind":"completed"}`),                  // 15
	)
	require.NoError(t, err)
	f.rollbackSeq = 12
	require.NoError(t, h.Close())
	f.main = h.ID()
	fk, err := f.store.Fork(ctx, f.main, 8)
	require.NoError(t, err)
	_, err = fk.Append(ctx, ev("turn/start", `{}`), ev("user/message", `{"text":"what the fork asked"}`))
	require.NoError(t, err)
	require.NoError(t, fk.Close())
	f.fork = fk.ID()
	// The server reads through a read-only file system, as logtool serve
	// builds it: every page must work without writing a derived file.
	f.srv, err = web.New(file.New(afero.NewReadOnlyFs(f.fs), "/s"), addr, append([]web.Option{web.WithToken(token)}, opts...)...)
	require.NoError(t, err)
	f.handler = f.srv.Handler()
	return f
}

// get requests target with the token as a bearer and the bound Host.
func (f *fixture) get(t *testing.T, target string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Host = addr
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	return w
}

// snapshot returns every file of the store and its bytes.
func (f *fixture) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, afero.Walk(f.fs, "/", func(path string, fi fs.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := afero.ReadFile(f.fs, path)
		out[path] = string(b)
		return err
	}))
	return out
}

func TestToken(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		target string
		header func(*http.Request)
		want   int
		cookie bool
	}{
		{name: "none", target: "/", want: http.StatusUnauthorized},
		{name: "wrong in URL", target: "/?token=nope", want: http.StatusUnauthorized},
		{name: "right in URL sets the cookie", target: "/?token=" + token, want: http.StatusOK, cookie: true},
		{name: "cookie", target: "/", header: func(r *http.Request) { r.AddCookie(&http.Cookie{Name: web.TokenCookie, Value: token}) }, want: http.StatusOK},
		{name: "wrong cookie", target: "/", header: func(r *http.Request) { r.AddCookie(&http.Cookie{Name: web.TokenCookie, Value: "x"}) }, want: http.StatusUnauthorized},
		{name: "bearer", target: "/api/ls", header: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, want: http.StatusOK},
		{name: "wrong bearer", target: "/api/ls", header: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token+"x") }, want: http.StatusUnauthorized},
		{name: "static needs it too", target: "/static/app.js", want: http.StatusUnauthorized},
		{name: "api needs it too", target: "/api/stat/" + f.main, want: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tt.target, nil)
			r.Host = addr
			if tt.header != nil {
				tt.header(r)
			}
			w := httptest.NewRecorder()
			f.handler.ServeHTTP(w, r)
			require.Equal(t, tt.want, w.Code, w.Body.String())
			set := w.Result().Cookies()
			if tt.cookie {
				require.Len(t, set, 1)
				require.Equal(t, web.TokenCookie, set[0].Name)
				require.Equal(t, token, set[0].Value)
				require.True(t, set[0].HttpOnly)
				require.Equal(t, http.SameSiteStrictMode, set[0].SameSite)
			} else {
				require.Empty(t, set)
			}
		})
	}
}

func TestGeneratedTokenIsRandom(t *testing.T) {
	store := file.New(afero.NewMemMapFs(), "/s")
	a, err := web.New(store, addr)
	require.NoError(t, err)
	b, err := web.New(store, addr)
	require.NoError(t, err)
	require.Len(t, a.Token(), 32)
	require.NotEqual(t, a.Token(), b.Token())
}

func TestHost(t *testing.T) {
	tests := []struct {
		name  string
		bound string
		host  string
		want  int
	}{
		{name: "bound address", bound: addr, host: addr, want: http.StatusOK},
		{name: "localhost alias of loopback", bound: addr, host: "localhost:8123", want: http.StatusOK},
		{name: "ipv6 loopback alias", bound: addr, host: "[::1]:8123", want: http.StatusOK},
		{name: "case does not matter", bound: addr, host: "LOCALHOST:8123", want: http.StatusOK},
		{name: "rebound name", bound: addr, host: "evil.example:8123", want: http.StatusMisdirectedRequest},
		{name: "other port", bound: addr, host: "127.0.0.1:9999", want: http.StatusMisdirectedRequest},
		{name: "no port", bound: addr, host: "127.0.0.1", want: http.StatusMisdirectedRequest},
		{name: "empty", bound: addr, host: "", want: http.StatusMisdirectedRequest},
		{name: "unspecified bind: an IP literal", bound: "0.0.0.0:8123", host: "192.168.1.9:8123", want: http.StatusOK},
		{name: "unspecified bind: a name", bound: "0.0.0.0:8123", host: "evil.example:8123", want: http.StatusMisdirectedRequest},
		{name: "unspecified bind: other port", bound: "0.0.0.0:8123", host: "192.168.1.9:80", want: http.StatusMisdirectedRequest},
		{name: "named bind", bound: "10.0.0.5:8123", host: "localhost:8123", want: http.StatusMisdirectedRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := web.New(file.New(afero.NewMemMapFs(), "/s"), tt.bound, web.WithToken(token))
			require.NoError(t, err)
			r := httptest.NewRequest(http.MethodGet, "/?token="+token, nil)
			r.Host = tt.host
			w := httptest.NewRecorder()
			srv.Handler().ServeHTTP(w, r)
			require.Equal(t, tt.want, w.Code, w.Body.String())
		})
	}
}

// TestReadOnly sends every method to every route: only GET and HEAD are
// served, and no request changes a byte of the store.
func TestReadOnly(t *testing.T) {
	f := newFixture(t)
	before := f.snapshot(t)
	routes := []string{"/", "/s/" + f.main, "/s/" + f.main + "/verify", "/diff?a=" + f.main + "&b=" + f.fork,
		"/api/ls", "/api/tree", "/api/stat/" + f.main, "/api/verify/" + f.main, "/api/replay/" + f.main, "/static/app.js"}
	for _, route := range routes {
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			t.Run(m+" "+route, func(t *testing.T) {
				r := httptest.NewRequest(m, route, strings.NewReader("x"))
				r.Host = addr
				r.Header.Set("Authorization", "Bearer "+token)
				w := httptest.NewRecorder()
				f.handler.ServeHTTP(w, r)
				if m == http.MethodGet || m == http.MethodHead {
					require.Equal(t, http.StatusOK, w.Code, w.Body.String())
					return
				}
				require.Equal(t, http.StatusMethodNotAllowed, w.Code)
				require.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
			})
		}
	}
	require.Equal(t, before, f.snapshot(t))
}

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t)
	for _, target := range []string{"/", "/s/" + f.main, "/api/ls", "/s/nope"} {
		w := f.get(t, target)
		csp := w.Header().Get("Content-Security-Policy")
		require.Contains(t, csp, "default-src 'self'", target)
		require.Contains(t, csp, "script-src 'self'", target)
		require.NotContains(t, csp, "unsafe-inline", target)
		require.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"), target)
		require.Equal(t, "no-referrer", w.Header().Get("Referrer-Policy"), target)
	}
	// The pages hold no inline script the policy would have to allow.
	for _, target := range []string{"/", "/s/" + f.main, "/diff?a=" + f.main + "&b=" + f.fork, "/s/" + f.main + "/verify"} {
		body := f.get(t, target).Body.String()
		require.Equal(t, 1, strings.Count(body, "<script"), target)
		require.Contains(t, body, `<script src="/static/app.js" defer></script>`, target)
		require.NotContains(t, body, " style=", target)
	}
}

// A session is named in a URL as on the command line (handle.Resolve): the
// start of its ID, in either case, or a label query k=v; the server
// redirects to the URL with its ID. A name several sessions answer to
// lists them (300, the session list of them; 409 on /api/), one nothing
// answers to is 404. Nothing is written.
func TestSessionNames(t *testing.T) {
	f := newFixture(t)
	before := f.snapshot(t)
	for _, tc := range []struct{ target, location string }{
		{"/s/" + strings.ToLower(f.main), "/s/" + f.main},
		{"/s/" + strings.ToLower(f.main) + "/verify", "/s/" + f.main + "/verify"},
		{"/s/" + f.main[:25] + "/events?from=3", "/s/" + f.main + "/events?from=3"},
		{"/s/title=%3Cb%3Ebold%3C%2Fb%3E", "/s/" + f.main},
		{"/api/stat/title=%3Cb%3Ebold%3C%2Fb%3E", "/api/stat/" + f.main},
		{"/diff?a=" + strings.ToLower(f.main) + "&b=" + f.fork + "&as=2", "/diff?a=" + f.main + "&as=2&b=" + f.fork},
	} {
		res := f.get(t, tc.target)
		require.Equal(t, http.StatusFound, res.Code, tc.target)
		require.Equal(t, tc.location, res.Header().Get("Location"), tc.target)
	}
	res := f.get(t, "/s/0")
	require.Equal(t, http.StatusMultipleChoices, res.Code)
	require.Contains(t, res.Body.String(), `href="/s/`+f.main+`"`)
	require.Contains(t, res.Body.String(), `href="/s/`+f.fork+`"`)
	res = f.get(t, "/api/stat/0")
	require.Equal(t, http.StatusConflict, res.Code)
	require.Contains(t, res.Body.String(), f.main)
	require.Contains(t, res.Body.String(), f.fork)
	require.Equal(t, http.StatusNotFound, f.get(t, "/s/7ZZZ").Code)
	require.Equal(t, http.StatusNotFound, f.get(t, "/s/agent=nobody").Code)
	require.Equal(t, before, f.snapshot(t), "names are resolved without writing")
}

func TestBadIDs(t *testing.T) {
	f := newFixture(t)
	before := f.snapshot(t)
	unknown := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	tests := []struct {
		target string
		want   int
	}{
		{"/s/abc", http.StatusBadRequest},
		{"/s/..%2F..%2Fetc%2Fpasswd", http.StatusBadRequest},
		{"/s/" + f.main + "x", http.StatusBadRequest},
		{"/s/" + f.main + ".jsonl", http.StatusBadRequest},
		{"/s/abc/live?after=0", http.StatusBadRequest},
		{"/s/abc/verify", http.StatusBadRequest},
		{"/api/stat/abc", http.StatusBadRequest},
		{"/api/replay/abc", http.StatusBadRequest},
		{"/diff?a=abc&b=" + f.main, http.StatusBadRequest},
		{"/diff?a=" + f.main, http.StatusBadRequest},
		{"/diff?a=" + f.main + "&b=" + f.fork + "&as=-1", http.StatusBadRequest},
		{"/diff?a=" + f.main + "&b=" + f.fork + "&bs=x", http.StatusBadRequest},
		{"/api/replay/" + f.main + "?projection=../x", http.StatusBadRequest},
		{"/s/" + f.main + "/live", http.StatusBadRequest},
		{"/s/" + unknown, http.StatusNotFound},
		{"/s/" + unknown + "/live?from=0&after=0", http.StatusNotFound},
		{"/s/" + f.main + "/live?from=5&after=3", http.StatusBadRequest},
		{"/s/abc/events?from=0", http.StatusBadRequest},
		{"/s/" + f.main + "/events?from=x", http.StatusBadRequest},
		{"/s/" + f.main + "/events?from=5&to=4", http.StatusBadRequest},
		{"/s/" + f.main + "/events?from=99", http.StatusNotFound},
		{"/s/" + unknown + "/events?from=0", http.StatusNotFound},
		{"/diff?a=" + unknown + "&b=" + f.main, http.StatusNotFound},
		{"/nothing", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			require.Equal(t, tt.want, f.get(t, tt.target).Code)
		})
	}
	require.Equal(t, before, f.snapshot(t))
}

// TestEscaping: event data and labels are untrusted; markup in them is
// shown as text.
func TestEscaping(t *testing.T) {
	f := newFixture(t)
	for _, target := range []string{"/s/" + f.main, "/diff?a=" + f.main + "&b=" + f.main + "&bs=1", "/", "/?text=%3Cscript%3Ealert&q=%3Cimg+src%3Dx"} {
		body := f.get(t, target).Body.String()
		for _, raw := range []string{"<script>alert", "<img src=x", "<b>bold</b>"} {
			require.NotContains(t, body, raw, target)
		}
	}
	body := f.get(t, "/s/"+f.main).Body.String()
	require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, body, "&lt;script&gt;alert(3)&lt;/script&gt;")
	require.Contains(t, body, "&lt;img src=x onerror=alert(2)&gt;")
	list := f.get(t, "/?q=coder").Body.String()
	require.Contains(t, list, "title=&lt;b&gt;bold&lt;/b&gt;")
}

func TestSessionPage(t *testing.T) {
	f := newFixture(t)
	w := f.get(t, "/s/"+f.main)
	require.Equal(t, http.StatusOK, w.Code)
	body := w.Body.String()
	// The conversation: messages, folded reasoning, the call and its result.
	require.Contains(t, body, "the live question")
	require.Contains(t, body, `<details class="reasoning"><summary>reasoning <span class="note">11 characters</span> <span class="preview">think first</span></summary><pre>think first</pre></details>`)
	require.Contains(t, body, `<summary>call <b>ls</b>`)
	require.Contains(t, body, `<summary>result of <a href="#seq-4">ls</a> <span class="note">1 line, 25 B</span>`)
	require.Contains(t, body, "usage: 100 in · 7 out · $0.0015")
	require.Contains(t, body, "usage in total: 100 in · 7 out · $0.0015 · 1 rollback;")
	// The rollback's abandoned branch (seqs 9..11) is marked, the rest not.
	require.Contains(t, body, `class="item k-user abandoned" id="seq-10"`)
	require.Contains(t, body, `class="item k-user" id="seq-14"`)
	require.Contains(t, body, `class="item k-user" id="seq-1"`)
	require.Contains(t, body, `<section class="turn abandoned" id="turn-9">`)
	require.Contains(t, body, "rollback to <a href=\"#seq-8\">seq 8</a>")
	require.Contains(t, body, "abandoned branch: the rollback at <a href=\"#seq-12\">seq 12</a> returns over it to seq 8")
	// The fork is linked, with a diff, and marked where it branches off.
	require.Contains(t, body, `<a href="/s/`+f.fork+`">`)
	require.Contains(t, body, "/diff?a="+f.main+"&amp;b="+f.fork)
	require.Contains(t, body, `↗ fork <a href="/s/`+f.fork+`">`)
	// Last turns first, numbered; the timeline has a bar a turn (the
	// abandoned one grey) and a legend that says what the bars measure.
	require.Less(t, strings.Index(body, `id="turn-13"`), strings.Index(body, `id="turn-0"`))
	require.Contains(t, body, `<h2>turn 3 <span class="muted">at seq 13 · `)
	require.Equal(t, 3, strings.Count(body, "<rect "))
	require.Equal(t, 1, strings.Count(body, `class="bar abandoned"`))
	require.Contains(t, body, "its height: its tokens (in + out), the tallest 107 tokens")
	require.Contains(t, body, `<span class="swatch bar abandoned"></span> abandoned by a rollback`)
	// Every event is one click from itself as stored; step markers show
	// nothing of their own.
	require.Contains(t, body, `<a href="/s/`+f.main+`/events?from=14&amp;to=14" title="seq 14 as stored">14</a>`)
	require.NotContains(t, body, `id="seq-2"`, "step/start")
	// Every anchor is unique (a marker has none of its own).
	ids := map[string]int{}
	for _, m := range regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		ids[m[1]]++
		require.Equal(t, 1, ids[m[1]], m[1])
	}
	// The newest page follows the log.
	require.Contains(t, body, `data-follow="/s/`+f.main+`/live?after=15&amp;from=0"`)

	fork := f.get(t, "/s/"+f.fork).Body.String()
	require.Contains(t, fork, "fork of <a href=\"/s/"+f.main+"\">")
	require.Contains(t, fork, `class="item k-user inherited" id="seq-1"`)
	require.Contains(t, fork, `class="item k-user" id="seq-10"`)
	require.Contains(t, fork, "↗ forked from <a href=\"/s/"+f.main+"\">"+f.main+"</a> after seq 8")
	require.Contains(t, fork, "what the fork asked")
}

func TestSessionPaging(t *testing.T) {
	f := newFixture(t, web.WithPageEvents(5))
	last := f.get(t, "/s/"+f.main).Body.String()
	require.Contains(t, last, "showing seqs 11–15")
	require.Contains(t, last, `href="/s/`+f.main+`?before=11" class="older"`)
	require.NotContains(t, last, "think first")
	// The rollback at 12 marks 11 on this page though the turn began earlier.
	require.Contains(t, last, `class="item k-stop abandoned" id="seq-11"`)
	require.Contains(t, last, `<h2>a turn begun before this page <span class="muted">from seq 11 · `, "the page starts mid-turn")
	require.Contains(t, last, `<h2>turn <span class="muted">at seq 13 · `, "turns before the page are not counted")

	older := f.get(t, "/s/"+f.main+"?before=11").Body.String()
	require.Contains(t, older, "showing seqs 6–10")
	require.Contains(t, older, "← newer")
	require.NotContains(t, older, "data-follow", "an older page does not follow the log")
	// A rollback after the page still marks the branch on it.
	require.Contains(t, older, `class="item k-user abandoned" id="seq-10"`)
	require.Contains(t, older, `class="item k-usage" id="seq-6"`)
	require.Contains(t, older, "usage on this page (seqs 6–10): 100 in")

	first := f.get(t, "/s/"+f.main+"?before=3").Body.String()
	require.Contains(t, first, "showing seqs 0–2")
	require.NotContains(t, first, "older →")
}

func TestDiff(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, query string
		want        []string
	}{
		{name: "a fork and its parent part after the fork point", query: "a=" + f.main + "&b=" + f.fork,
			want: []string{f.fork + " is a fork of " + f.main + " at seq 8", "10 events in common; they part at seq 10 of A (seq 10 of B)",
				"the abandoned question", "what the fork asked", `class="item k-user abandoned" id="seq-10"`}},
		{name: "either order", query: "a=" + f.fork + "&b=" + f.main,
			want: []string{f.fork + " is a fork of " + f.main + " at seq 8", "they part at seq 10 of A"}},
		{name: "a session with itself is equal", query: "a=" + f.main + "&b=" + f.main,
			want: []string{"the two are equal from their starts (16 events in common)"}},
		{name: "two seqs of one session", query: "a=" + f.main + "&b=" + f.main + "&as=9&bs=13",
			want: []string{"1 events in common; they part at seq 10 of A (seq 14 of B)", "A from seq 10", "B from seq 14"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.get(t, "/diff?"+tt.query)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			for _, s := range tt.want {
				require.Contains(t, w.Body.String(), s)
			}
		})
	}
}

// TestVerifyPage: the page and /api/verify show verify.Session's report
// of the session, clean or damaged (file, offset, seq, the message
// escaped), with 200 either way.
func TestVerifyPage(t *testing.T) {
	evs := []eventlog.Event{ev("user/message", `{"text":"a"}`), ev("user/message", `{"text":"b"}`), ev("user/message", `{"text":"c"}`),
		ev("user/message", `{"text":"d"}`)}
	tests := []struct {
		name   string
		damage bool
		want   []string
	}{
		{name: "clean", want: []string{`id="result">ok: 4 events`}},
		{name: "damage names file, offset and seq", damage: true, want: []string{`id="result">FAIL: 2 events`, ", seq 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, id := oneSession(t, evs)
			path := "/s/" + id + ".jsonl"
			if tt.damage {
				b, err := afero.ReadFile(f.fs, path)
				require.NoError(t, err)
				lines := strings.SplitAfter(string(b), "\n")
				lines[3] = `{"seq":2,"type":"<here>` + "\n" // the header is line 0
				require.NoError(t, afero.WriteFile(f.fs, path, []byte(strings.Join(lines, "")), 0o644))
			}
			rep := verify.Session(t.Context(), file.New(f.fs, "/s"), id)
			require.Equal(t, !tt.damage, rep.OK)
			want := append(tt.want, "<code>"+path+"</code>")
			if tt.damage {
				want = append(want, fmt.Sprintf("corrupt at offset %d", *rep.Error.Offset), html.EscapeString(rep.Error.Message))
			}
			page := f.get(t, "/s/"+id+"/verify")
			require.Equal(t, http.StatusOK, page.Code)
			for _, s := range want {
				require.Contains(t, page.Body.String(), s)
			}
			api := f.get(t, "/api/verify/"+id)
			require.Equal(t, http.StatusOK, api.Code)
			require.Equal(t, jsonLine(t, rep), api.Body.String())
		})
	}
	f, _ := oneSession(t, evs)
	require.Equal(t, http.StatusNotFound, f.get(t, "/api/verify/01ARZ3NDEKTSV4RRFFQ69G5FAV").Code, "no such session")
}

// jsonLine is v as logtool prints it for scripts: one line, HTML
// characters left alone.
func jsonLine(t *testing.T, vs ...any) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, v := range vs {
		require.NoError(t, enc.Encode(v))
	}
	return b.String()
}

// TestAPIAnswersWithTheLibraryReports: /api/ answers with the reports of
// the operation packages, encoded as logtool encodes them (the labels'
// markup left as it is), with the content type of each.
func TestAPIAnswersWithTheLibraryReports(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	infos, broken, err := inspect.List(ctx, f.store)
	require.NoError(t, err)
	require.Empty(t, broken)
	var ls []any
	for _, in := range infos {
		ls = append(ls, inspect.NewStatReport(in))
	}
	rows, broken, err := inspect.Forest(ctx, f.store)
	require.NoError(t, err)
	require.Empty(t, broken)
	var tree []any
	for _, r := range rows {
		tree = append(tree, r.Report())
	}
	stat, err := inspect.Stat(ctx, inspect.InStore(f.store, f.main))
	require.NoError(t, err)
	state := func(p projection.Projection) string {
		h, err := f.store.Open(ctx, f.main, handle.ReadOnly)
		require.NoError(t, err)
		defer h.Close()
		_, err = replay.Replay(ctx, h, []projection.Projection{p})
		require.NoError(t, err)
		b, err := p.MarshalState()
		require.NoError(t, err)
		return string(b) + "\n"
	}
	tests := []struct {
		target, want, ctype string
	}{
		{"/api/ls", jsonLine(t, ls...), "application/x-ndjson"},
		{"/api/tree", jsonLine(t, tree...), "application/x-ndjson"},
		{"/api/stat/" + f.main, jsonLine(t, stat), "application/json"},
		{"/api/verify/" + f.main, jsonLine(t, verify.Session(ctx, f.store, f.main)), "application/json"},
		{"/api/replay/" + f.main, state(projection.NewAgent()), "application/json"},
		{"/api/replay/" + f.main + "?projection=transcript", state(projection.NewTranscript()), "application/json"},
	}
	for _, tt := range tests {
		w := f.get(t, tt.target)
		require.Equal(t, http.StatusOK, w.Code, tt.target)
		require.Equal(t, tt.want, w.Body.String(), tt.target)
		require.Equal(t, tt.ctype, w.Header().Get("Content-Type"), tt.target)
	}
	require.Contains(t, f.get(t, "/api/stat/"+f.main).Body.String(), `"title":"<b>bold</b>"`, "markup is left as it is, as logtool prints it")
}

func TestList(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, query string
		want, not   []string
	}{
		{name: "all", query: "", want: []string{f.main, f.fork, "2 of 2 sessions", `<td class="num">16</td>`, `<td class="num">11</td>`, "<td>raw</td>"}},
		{name: "by events, every session described", query: "sort=events", want: []string{`<td class="num">16</td>`, `<td class="num">11</td>`, "<td>raw</td>"}},
		{name: "label value", query: "q=coder", want: []string{f.main, "1 of 2 sessions match"}, not: []string{`data-id="` + f.fork}},
		{name: "key=value", query: "q=agent%3Dcod", want: []string{f.main}, not: []string{`data-id="` + f.fork}},
		{name: "key=value of another key", query: "q=title%3Dcoder", want: []string{"0 of 2"}},
		{name: "ID", query: "q=" + strings.ToLower(f.fork[20:]), want: []string{`data-id="` + f.fork}, not: []string{`data-id="` + f.main}},
		{name: "text in the events", query: "text=WHAT+the+FORK", want: []string{`data-id="` + f.fork, "1 of 2 sessions holding"}, not: []string{`data-id="` + f.main}},
		{name: "text inherited by a fork", query: "text=think+first", want: []string{`data-id="` + f.fork, `data-id="` + f.main, "2 of 2"}},
		{name: "text and label", query: "q=coder&text=think", want: []string{`data-id="` + f.main, "1 of 2"}},
		{name: "text nowhere", query: "text=nowhere", want: []string{"0 of 2"}},
		{name: "tree puts the fork under its parent", query: "sort=tree",
			want: []string{`class="session depth-0" data-id="` + f.main, `class="session depth-1" data-id="` + f.fork}},
		{name: "parent linked", query: "", want: []string{`<a href="/s/` + f.main + `">fork@8</a>`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := f.get(t, "/?"+tt.query).Body.String()
			for _, s := range tt.want {
				require.Contains(t, body, s)
			}
			for _, s := range tt.not {
				require.NotContains(t, body, s)
			}
		})
	}
	// Ordering: by events the main session (16) comes before the fork (11).
	body := f.get(t, "/?sort=events").Body.String()
	require.Less(t, strings.Index(body, `data-id="`+f.main), strings.Index(body, `data-id="`+f.fork))
}

// TestListOrders: newest created first by default; ?sort=active lists
// the last active first, as ls does (inspect.List).
func TestListOrders(t *testing.T) {
	fsys := afero.NewMemMapFs()
	st := file.New(fsys, "/s")
	create := func(at int64, evs ...eventlog.Event) string {
		h, err := st.Create(t.Context(), handle.WithCreatedAt(at))
		require.NoError(t, err)
		_, err = h.Append(t.Context(), evs...)
		require.NoError(t, err)
		require.NoError(t, h.Close())
		return h.ID()
	}
	busy := create(1000, eventlog.Event{Type: "user/message", Time: 9000, Data: json.RawMessage(`{"text":"late"}`)})
	idle := create(2000)
	srv, err := web.New(file.New(afero.NewReadOnlyFs(fsys), "/s"), addr, web.WithToken(token))
	require.NoError(t, err)
	f := &fixture{handler: srv.Handler()}
	ids := regexp.MustCompile(`data-id="([0-9A-Z]+)"`)
	order := func(query string) []string {
		var out []string
		for _, m := range ids.FindAllStringSubmatch(f.get(t, "/?"+query).Body.String(), -1) {
			out = append(out, m[1])
		}
		return out
	}
	require.Equal(t, []string{idle, busy}, order(""), "newest created first")
	require.Equal(t, []string{busy, idle}, order("sort=active"), "last active first")
	infos, _, err := inspect.List(t.Context(), st)
	require.NoError(t, err)
	require.Equal(t, []string{infos[0].ID, infos[1].ID}, order("sort=active"), "as ls lists them")
}

func TestListPages(t *testing.T) {
	f := newFixture(t, web.WithListPage(1))
	first := f.get(t, "/?sort=tree").Body.String()
	require.Contains(t, first, `data-id="`+f.main)
	require.NotContains(t, first, `data-id="`+f.fork)
	require.Contains(t, first, `href="/?page=1&amp;sort=tree">older →`)
	second := f.get(t, "/?page=1&sort=tree").Body.String()
	require.Contains(t, second, `data-id="`+f.fork)
	require.Contains(t, second, "← newer")
}

// TestLive follows a session over a real connection: an event appended
// after the stream started arrives, rendered and escaped.
func TestLive(t *testing.T) {
	f := newFixture(t, web.WithFollowEvery(time.Millisecond))
	lines := follow(t, f.handler, "/s/"+f.fork+"/live?from=0&after=10", "")

	h, err := f.store.Open(t.Context(), f.fork, handle.ReadWrite)
	require.NoError(t, err)
	_, err = h.Append(t.Context(), ev("assistant/message", `{"text":"<script>live</script>"}`))
	require.NoError(t, err)
	require.NoError(t, h.Close())

	id, u := nextUpdate(t, lines)
	require.Equal(t, "11", id)
	// The message goes at the end of the turn it belongs to (seq 9's),
	// escaped; the count in the heading is current.
	require.Len(t, u.Groups, 1)
	require.Equal(t, "turn-9", u.Groups[0].ID)
	require.Contains(t, u.Groups[0].Items, `<div class="item k-assistant" id="seq-11"`)
	require.Contains(t, u.Groups[0].Items, "&lt;script&gt;live&lt;/script&gt;")
	require.NotContains(t, u.Groups[0].Items, "<script>")
	require.Contains(t, u.Facts, `<span id="events">12 events</span>`)
}

// update is a message of the live view, as the page reads it.
type update struct {
	Reload bool   `json:"reload"`
	Facts  string `json:"facts"`
	Usage  string `json:"usage"`
	Chart  string `json:"chart"`
	Pager  string `json:"pager"`
	Groups []struct {
		ID, Section, Head, Items string
	} `json:"groups"`
	Held   string `json:"held"`
	HeldIn string `json:"heldIn"`
}

// nextUpdate reads the next message of a live stream: its id and update.
func nextUpdate(t *testing.T, lines *bufio.Scanner) (string, update) {
	t.Helper()
	var id, data string
	for lines.Scan() {
		l := lines.Text()
		if l == "" && data != "" {
			var u update
			require.NoError(t, json.Unmarshal([]byte(data), &u), data)
			return id, u
		}
		if v, ok := strings.CutPrefix(l, "id: "); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(l, "data: "); ok {
			data += v
		}
	}
	require.NoError(t, lines.Err())
	t.Fatal("the stream ended")
	return "", update{}
}

// TestDamagedSession: a log with a corrupt row in the middle is refused
// with 422 and the error names the file, the page is not half rendered.
func TestDamagedSession(t *testing.T) {
	f := newFixture(t)
	path := "/s/" + f.main + ".jsonl"
	b, err := afero.ReadFile(f.fs, path)
	require.NoError(t, err)
	damaged := strings.Replace(string(b), `"the abandoned question"`, `"the abandoned question"}}`, 1)
	require.NotEqual(t, string(b), damaged)
	require.NoError(t, afero.WriteFile(f.fs, path, []byte(damaged), 0o600))
	for _, target := range []string{"/s/" + f.main, "/diff?a=" + f.main + "&b=" + f.fork, "/s/" + f.main + "/live?from=0&after=0"} {
		w := f.get(t, target)
		require.Equal(t, http.StatusUnprocessableEntity, w.Code, target)
		require.Contains(t, w.Body.String(), path, target)
		require.NotContains(t, w.Body.String(), "<html", target)
	}
}

// TestHeadOfLiveReturns: a HEAD of the live stream answers at once
// instead of following the log.
func TestHeadOfLiveReturns(t *testing.T) {
	f := newFixture(t)
	r := httptest.NewRequest(http.MethodHead, "/s/"+f.main+"/live?from=0&after=0", nil)
	r.Host = addr
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
	require.Empty(t, w.Body.String())
}

// TestZstdSession: a zstd session's pages read as a raw one's.
func TestZstdSession(t *testing.T) {
	f, id := oneSession(t, []eventlog.Event{ev("turn/start", `{}`), ev("user/message", `{"text":"compressed <hello>"}`), ev("turn/end", `{"kind":"completed"}`)},
		handle.WithEncoding(handle.EncodingZstd))
	page := f.get(t, "/s/"+id)
	require.Equal(t, http.StatusOK, page.Code, page.Body.String())
	require.Contains(t, page.Body.String(), "compressed &lt;hello&gt;")
	require.Contains(t, page.Body.String(), "· zstd ·")
	list := f.get(t, "/")
	require.Contains(t, list.Body.String(), "<td>zstd</td>")
}

// TestChunksFold: a stream of chunks is one item holding their joined
// text, not a row a delta.
func TestChunksFold(t *testing.T) {
	f, id := oneSession(t, []eventlog.Event{ev("turn/start", `{}`), ev("assistant/chunk", `{"text":"Hel"}`), ev("assistant/chunk", `{"text":"lo <b>"}`),
		ev("assistant/chunk", `{}`), ev("assistant/message", `{"text":"Hello <b>"}`), ev("assistant/chunk", `{"text":"again"}`)})
	body := f.get(t, "/s/"+id).Body.String()
	require.Equal(t, 1, strings.Count(body, `class="item k-assistant`), "the message says what the chunks did")
	require.Contains(t, body, "<pre>Hello &lt;b&gt;</pre>")
	require.Contains(t, body, "<code>assistant/chunk</code> <span class=\"preview\">{}</span>", "a chunk of the wrong shape shows as stored")
	require.NotContains(t, body, "again", "after the step's message, its chunks are not its text")

	// A step with chunks only: one message of their joined text, at the
	// first chunk's seq, however many deltas it took.
	evs := []eventlog.Event{ev("turn/start", `{}`), ev("step/start", `{}`)}
	for i := range 300 {
		evs = append(evs, ev("assistant/chunk", fmt.Sprintf(`{"text":"w%d "}`, i)))
	}
	f, id = oneSession(t, append(evs, ev("step/end", `{}`)))
	body = f.get(t, "/s/"+id).Body.String()
	require.Equal(t, 1, strings.Count(body, `class="item k-assistant`))
	require.Contains(t, body, `id="seq-2"`)
	require.Contains(t, body, `streamed: 300 chunks</span></b><pre>w0 w1 w2 `)
	require.Contains(t, body, `w299 </pre>`)
}

// TestForeignRecordsFold: a run of records of a type the page does not
// know is one line with its count and the first one's content, as
// logtool show folds it; a click opens the run as stored, a page at a
// time.
func TestForeignRecordsFold(t *testing.T) {
	evs := []eventlog.Event{ev("turn/start", `{}`), ev("user/message", `{"text":"go"}`)}
	for i := range 150 {
		evs = append(evs, ev("claude/progress", fmt.Sprintf(`{"hook":"<b>PostToolUse</b>","n":%d}`, i)))
	}
	evs = append(evs, ev("assistant/message", `{"text":"done"}`), ev("claude/system", `{"level":"info"}`))
	f, id := oneSession(t, evs)
	body := f.get(t, "/s/"+id).Body.String()
	require.Equal(t, 2, strings.Count(body, `class="item k-other`), "150 records in a row, then one")
	require.Contains(t, body, `<code>claude/progress</code> <b class="count">×150</b> <span class="preview">{&#34;hook&#34;:&#34;&lt;b&gt;PostToolUse&lt;/b&gt;&#34;,&#34;n&#34;:0}</span>`)
	require.Contains(t, body, `the first of 150 records in a row (seqs 2–151), 35 B — <a href="/s/`+id+`/events?from=2&amp;to=151">open all 150 as stored</a>`)
	require.Contains(t, body, `<code>claude/system</code> <span class="preview">`)
	require.Contains(t, body, "done")

	run := f.get(t, "/s/"+id+"/events?from=2&to=151")
	require.Equal(t, http.StatusOK, run.Code)
	page := run.Body.String()
	require.Equal(t, 100, strings.Count(page, `<div class="raw"`), "a page at a time")
	require.Contains(t, page, "&#34;n&#34;: 99")
	require.NotContains(t, page, "&#34;n&#34;: 100")
	require.Contains(t, page, `<a href="/s/`+id+`/events?from=102&amp;to=151">next →</a>`)
	require.NotContains(t, page, "<b>PostToolUse", "escaped")
	rest := f.get(t, "/s/"+id+"/events?from=102&to=151").Body.String()
	require.Equal(t, 50, strings.Count(rest, `<div class="raw"`))
	require.NotContains(t, rest, "next →")
	one := f.get(t, "/s/"+id+"/events?from=152").Body.String()
	require.Contains(t, one, "<code>assistant/message</code>")
	require.Contains(t, one, `<a href="/s/`+id+`?before=153#seq-152" title="in the conversation">seq 152</a>`)
}
