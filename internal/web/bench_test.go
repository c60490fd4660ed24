package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/web"
)

// BenchmarkSessionPage100MB times the page of a session of about 100 MB
// on disk (OS files): what docs/performance.md reports for serve.
func BenchmarkSessionPage100MB(b *testing.B) {
	ctx := b.Context()
	dir := b.TempDir()
	store := handle.NewFileStore(afero.NewOsFs(), dir)
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
	srv, err := web.New(handle.NewFileStore(afero.NewReadOnlyFs(afero.NewOsFs()), dir), fakeAPI{}, addr, web.WithToken(token))
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
