package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// TestRedactionNotes: an item whose event had secrets redacted at write
// says so in words beside its content (escaped, and readable without the
// page's colours), the record's JSON is no part of the content shown, and
// the page of the events as stored keeps the record as data.
func TestRedactionNotes(t *testing.T) {
	const awsKey, ghToken = "AKIAQYLPMN5HHHFPZAM2", "ghp_R8fK2mQ9xL4vT7nB3cJ6hD1sW5yE0aZuPgXo"
	f, id := oneSession(t, []eventlog.Event{ // redaction at write is on by default
		ev("turn/start", `{}`), // 0
		ev("tool/call", `{"id":"c1","name":"http","args":{"<i>h</i>":"`+ghToken+`","url":"x"}}`), // 1
		ev("tool/result", `{"id":"c1","output":"aws_access_key_id = `+awsKey+`"}`),               // 2
		ev("vendor/x", `{"token":"`+ghToken+`"}`),                                                // 3
		ev("user/message", `{"text":"nothing secret"}`),                                          // 4
	})

	body := f.get(t, "/s/"+id).Body.String()
	require.Contains(t, body, `<p class="redacted" role="note">redacted: args[&#34;&lt;i&gt;h&lt;/i&gt;&#34;] (github-token)</p>`)
	require.Contains(t, body, `<p class="redacted" role="note">redacted: output (aws-access-key-id)</p>`)
	require.Contains(t, body, `<p class="redacted" role="note">redacted: token (github-token)</p>`)
	require.Equal(t, 3, strings.Count(body, `class="redacted"`), "the message with nothing redacted has no note")
	require.Contains(t, body, `<p class="lineage" id="secrets">secrets: 3 strings redacted</p>`, "the page says what protects the session")
	require.Contains(t, body, "[REDACTED:aws-access-key-id]")
	require.NotContains(t, body, "$redacted", "the record is said, not shown as content")
	require.NotContains(t, body, "<i>h</i>", "escaped")
	for _, s := range []string{awsKey, ghToken} {
		require.NotContains(t, body, s)
	}

	stored := f.get(t, "/s/"+id+"/events?from=2&to=3")
	require.Equal(t, http.StatusOK, stored.Code)
	require.Contains(t, stored.Body.String(), `&#34;$redacted&#34;: [`, "as stored: the record is data")
	require.Contains(t, stored.Body.String(), `&#34;aws-access-key-id&#34;`)
}
