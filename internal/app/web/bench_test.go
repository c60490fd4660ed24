package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/app/web"
)

// BenchmarkSessionPage100MB times the page of a session of about 100 MB
// on disk (OS files): docs/performance.md, "Component benchmarks".
func BenchmarkSessionPage100MB(b *testing.B) {
	ctx := b.Context()
	dir := b.TempDir()
	store := file.New(afero.NewOsFs(), dir)
	h, err := store.Create(ctx)
	require.NoError(b, err)
	text := strings.Repeat("lorem ipsum dolor sit amet ", 40)
	for turn := 0; turn < 25000; turn++ {
		data := func(v any) json.RawMessage { m, _ := json.Marshal(v); return m }
		_, err := h.Append(ctx,
			eventlog.Event{Type: "turn/start", Time: int64(turn), Data: json.RawMessage(`{}`)},
			eventlog.Event{Type: "user/message", Time: int64(turn), Data: data(map[string]string{"text": fmt.Sprint(turn, text)})},
			eventlog.Event{Type: "tool/call", Time: int64(turn), Data: data(map[string]any{"id": fmt.Sprint("c", turn), "name": "read", "args": map[string]string{"path": "a.go"}})},
			eventlog.Event{Type: "tool/result", Time: int64(turn), Data: data(map[string]any{"id": fmt.Sprint("c", turn), "output": text + text})},
			eventlog.Event{Type: "assistant/message", Time: int64(turn), Data: data(map[string]string{"text": text})},
			eventlog.Event{Type: "usage", Time: int64(turn), Data: json.RawMessage(`{"inputTokens":1000,"outputTokens":50}`)},
			eventlog.Event{Type: "turn/end", Time: int64(turn), Data: json.RawMessage(`{"kind":"completed"}`)},
		)
		require.NoError(b, err)
		if turn%500 == 0 {
			require.NoError(b, h.Flush(ctx))
		}
	}
	require.NoError(b, h.Close())
	info, err := store.Stat(ctx, h.ID())
	require.NoError(b, err)
	b.Logf("log: %d bytes on disk, %d events", info.SizeBytes, info.Events)
	srv, err := web.New(file.New(afero.NewReadOnlyFs(afero.NewOsFs()), dir), addr, web.WithToken(token))
	require.NoError(b, err)
	hd := srv.Handler()
	b.ResetTimer()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodGet, "/s/"+h.ID(), nil)
		r.Host = addr
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		hd.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

// BenchmarkList10k times the list page of a store of 10,000 small
// sessions (OS files), the header-and-tail Stat of each included.
func BenchmarkList10k(b *testing.B) {
	dir := b.TempDir()
	osfs := afero.NewOsFs()
	for i := range 10000 {
		id := ulid.MustNew(uint64(1764450000000+i), ulid.DefaultEntropy()).String()
		row := fmt.Sprintf(`{"format":"sessionlog","version":1,"id":%q,"createdAt":%d,"labels":{"n":"%d"}}`+"\n"+
			`{"seq":0,"type":"turn/start","time":%d,"data":{}}`+"\n", id, 1764450000000+i, i, 1764450000000+i)
		require.NoError(b, afero.WriteFile(osfs, filepath.Join(dir, id+".jsonl"), []byte(row), 0o600))
	}
	srv, err := web.New(file.New(afero.NewReadOnlyFs(osfs), dir), addr, web.WithToken(token))
	require.NoError(b, err)
	hd := srv.Handler()
	for _, c := range []struct {
		name, target string
		index        bool
	}{
		{"age-no-index", "/", false}, {"age", "/", true}, {"tree", "/?sort=tree", true},
		{"label", "/?q=n%3D99", true}, {"events", "/?sort=events", true},
	} {
		target := c.target
		if c.index {
			// The header index, as any ls --tree leaves it; the server
			// itself cannot write it.
			_, err := file.New(osfs, dir).Tree(b.Context())
			require.NoError(b, err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r := httptest.NewRequest(http.MethodGet, target, nil)
				r.Host = addr
				r.Header.Set("Authorization", "Bearer "+token)
				w := httptest.NewRecorder()
				hd.ServeHTTP(w, r)
				if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "of 10000 sessions") {
					b.Fatal(w.Code, w.Body.String()[:min(500, w.Body.Len())])
				}
			}
		})
	}
}
