package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle/file"
)

// The fork diff renders what follows the parting point as the session
// page does: a run of foreign records is one folded item with its count,
// not a wall of records.
func TestDiffFoldsForeignRecords(t *testing.T) {
	f, main := oneSession(t, []eventlog.Event{
		ev("turn/start", `{}`), ev("user/message", `{"text":"go"}`), ev("turn/end", `{"kind":"completed"}`),
		ev("turn/start", `{}`), ev("user/message", `{"text":"the parent's question"}`),
	})
	st := file.New(f.fs, "/s")
	fk, err := st.Fork(t.Context(), main, 2)
	require.NoError(t, err)
	evs := []eventlog.Event{ev("turn/start", `{}`), ev("user/message", `{"text":"the fork's question"}`)}
	for i := range 50 {
		evs = append(evs, ev("claude/progress", fmt.Sprintf(`{"hook":"PostToolUse","n":%d}`, i)))
	}
	_, err = fk.Append(t.Context(), evs...)
	require.NoError(t, err)
	require.NoError(t, fk.Close())

	w := f.get(t, "/diff?a="+main+"&b="+fk.ID())
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := w.Body.String()
	require.Contains(t, body, "the fork&#39;s question")
	require.Contains(t, body, `<code>claude/progress</code> <b class="count">×50</b>`)
	require.Equal(t, 1, strings.Count(body, `<code>claude/progress</code>`), "50 records in a row are one item")
}
