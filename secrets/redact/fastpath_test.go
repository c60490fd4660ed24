package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// fastPathSeeds are inputs for FuzzFastPath: every detector's secret and
// near miss in context, the benchmark's workload turn, secrets split by
// escapes, and names of secrets spelled every way assignment accepts.
func fastPathSeeds() [][]byte {
	var out [][]byte
	for _, c := range detectorCases() {
		out = append(out, []byte(c.before+c.secret+c.after), []byte(c.nearMiss))
	}
	for _, e := range benchTurn() {
		out = append(out, e.Data)
	}
	for _, e := range nearMissData() {
		out = append(out, e.Data)
	}
	out = append(out,
		[]byte(`{"a":"x\u0067hp_`+fill(36, csAlnum, 1)+`"}`),
		[]byte(`AWS_SECRET_ACCESS_KEY_=`+fill(40, csB64, 2)),
		[]byte(`Secret-Access-K-e-y: "`+fill(40, csB64, 3)+`"`),
		[]byte(`twilio_api_secreT=`+fill(32, csAlnum, 4)),
		[]byte(`see https://hooks.slack.com/services/T0123ABCD/B0123ABCD/`+fill(24, csAlnum, 5)),
		[]byte(`bot12345678:AA`+fill(33, csB64url, 6)+` x.ya29.`+fill(40, csB64url, 7)),
		[]byte(`Server=db;User ID=sa;Password = hunter2 ;x=1`),
		[]byte(`pwd=abc;Host=h`),
		[]byte(`PWD = x\";Data Source=y`),
		[]byte(`line\nghp_`+fill(36, csAlnum, 8)+`\t\"sk-ant-api03-`+fill(90, csB64url, 9)+`\"`),
	)
	return out
}

// FuzzFastPath: the fast path (mayMatch before matchRun) changes no
// result. Every input, as data, as a JSON string of its bytes and as the
// raw body of a string, redacts the same with it and without
// (Redactor.slow), and connPasswords finds what refConnPasswords, the
// version that read every key, finds.
func FuzzFastPath(f *testing.F) {
	for _, s := range fastPathSeeds() {
		f.Add(s)
	}
	fast, slow := New(), New()
	slow.slow = true
	f.Fuzz(func(t *testing.T, in []byte) {
		quoted, _ := json.Marshal(string(in))
		for _, data := range [][]byte{in, quoted} {
			out, kinds, changed := fast.Redact(data)
			wantOut, wantKinds, wantChanged := slow.Redact(data)
			require.Equal(t, wantChanged, changed, "%q", data)
			require.Equal(t, wantKinds, kinds, "%q", data)
			require.Equal(t, wantOut, out, "%q", data)
		}
		require.Equal(t, slow.find(in, nil, false), fast.find(in, nil, false), "%q", in)
		for _, esc := range []bool{false, true} {
			require.Equal(t, refConnPasswords(text{in, esc}, nil), connPasswords(text{in, esc}, nil), "%q", in)
		}
		require.Equal(t, slow.find(in, nil, true), fast.find(in, nil, true), "%q", in)
	})
}

// TestFastPathSkips: the fast path lets through every run a detector
// starts from and stops the runs of ordinary code and prose, so that it
// saves work, not only matches the slow path.
func TestFastPathSkips(t *testing.T) {
	for _, tc := range []struct {
		run  string
		want bool
	}{
		{"hasCheckpoint", false},
		{"prepareBatch", false},
		{".Errorfunction", true}, // after a '.'
		{"/BeforeSlashes", true},
		{"ghp_" + fill(36, csAlnum, 1), true},
		{"sk-proj-" + fill(40, csB64url, 2), true},
		{"eyJhbGciOiJIUzI1NiJ9", true},
		{"AccountKey", true},
		{"SECRET_ACCESS_KEY", true},
		{"twilio_auth_token", true},
		{"NDk4MDIxNTk4MDIxNTk4MDIx", true}, // a Discord bot token's first part
		{"-----BEGIN", true},
		{"implementation", false},
		{"environment", false}, // ends in nt, not et
	} {
		s := []byte(" " + tc.run + " ")
		a, b := nextRun(text{s, false}, 0)
		require.Equal(t, len(s)-1, b, tc.run)
		require.Equal(t, tc.want, mayMatch(text{s, false}, a, b), tc.run)
	}
}

// refConnPasswords is connPasswords as it was before it looked for a
// password's key before reading the others (FuzzFastPath compares them).
func refConnPasswords(t text, out []span) []span {
	s := t.s
	n := len(out)
	conn := false
	for i := 0; ; {
		k := bytes.IndexByte(s[i:], '=')
		if k < 0 {
			break
		}
		eq := i + k
		i = eq + 1
		key, ok := connKey(t, eq)
		if !ok {
			continue
		}
		if !equalFold(key, "password") && !equalFold(key, "pwd") {
			conn = conn || isConnKey(key)
			continue
		}
		v := eq + 1
		for v < len(s) && s[v] == ' ' {
			v++
		}
		e := v
		for e < len(s) {
			c := s[e]
			if t.esc && c == '\\' && e+1 < len(s) {
				c = unescape[s[e+1]]
				if c != ';' && c != '"' && c != '\'' && c != '\n' && c != '\r' {
					e += 2
					continue
				}
			}
			if c == ';' || c == '"' || c == '\'' || c == '\n' || c == '\r' {
				break
			}
			e++
		}
		for e > v && s[e-1] == ' ' {
			e--
		}
		if e > v && !isMarker(s, v, e) {
			out = append(out, span{v, e, "conn-password"})
		}
	}
	if !conn {
		return out[:n]
	}
	return out
}

// TestMayHold: the look at the whole data passes what no detector can
// match (a tool call's names and paths, prose of short or ordinary words)
// and lets through what one may: a run a detector starts from, an escape,
// an '@' or ';', or any data when there are extra patterns.
func TestMayHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want bool
	}{
		{"a tool call", `{"id":"call_0001","name":"read_file","args":{"path":"internal/server/handlers/session.go"}}`, false},
		{"prose", `{"text":"the implementation of the environment is done"}`, false},
		{"long numbers", `{"n":[123456789012345,-123456789012345]}`, false},
		{"a token's prefix", `{"t":"ghp_` + fill(36, csAlnum, 1) + `"}`, true},
		{"a run after a slash", `{"p":"a/BeforeSlashes"}`, true},
		{"a secret's name", `{"SECRET_ACCESS_KEY":"x"}`, true},
		{"an escape", `{"t":"a\nb"}`, true},
		{"a URL's password", `{"u":"a://:p@h"}`, true},
		{"a connection string", `{"c":"pwd=abc;Host=h"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, New().mayHold([]byte(tc.data)))
			if !tc.want {
				require.False(t, New().any([]byte(tc.data)), "mayHold passed data a detector matches")
			}
		})
	}
	t.Run("extra patterns", func(t *testing.T) {
		r := New(WithPattern("internal", regexp.MustCompile(`internal/\w+`)))
		require.True(t, r.mayHold([]byte(`{"path":"internal/server"}`)))
	})
}
