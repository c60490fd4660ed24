package redact

import (
	"bytes"
)

// The detectors. Each matches one documented shape (docs/format.md,
// "Redaction"; Detectors lists them): a fixed prefix and a body of fixed
// charset and length, or a fixed context (a variable name, a URL's
// structure) in front of one. None matches on entropy or on a generic
// word like "token" alone: a false positive destroys data that cannot be
// got back.

// tokenRule is a token with a fixed prefix: prefix, then between min and
// max bytes of body, not followed by another byte of body.
type tokenRule struct {
	kind     string
	prefix   string
	body     *class
	min, max int
}

// tokenRules, by the first byte of their prefix. Tokens with a structure
// of their own (OpenAI, Anthropic, JWT, Discord, Slack) are matched by
// functions in matchRun.
var tokenRules = func() (t [256][]tokenRule) {
	for _, r := range []tokenRule{
		{"aws-access-key-id", "AKIA", base32, 16, 16},
		{"aws-access-key-id", "ASIA", base32, 16, 16},
		{"aws-access-key-id", "ABIA", base32, 16, 16},
		{"aws-access-key-id", "ACCA", base32, 16, 16},
		{"gcp-api-key", "AIza", b64url, 35, 35},
		{"gcp-oauth-client-secret", "GOCSPX-", b64url, 28, 28},
		{"openrouter-api-key", "sk-or-v1-", hexLower, 64, 64},
		{"groq-api-key", "gsk_", alnum, 52, 52},
		{"huggingface-token", "hf_", alnum, 34, 34},
		{"xai-api-key", "xai-", alnum, 80, 80},
		{"replicate-token", "r8_", alnum, 37, 37},
		{"perplexity-api-key", "pplx-", alnum, 48, 48},
		{"github-token", "ghp_", alnum, 36, 36},
		{"github-token", "gho_", alnum, 36, 36},
		{"github-token", "ghu_", alnum, 36, 36},
		{"github-token", "ghs_", alnum, 36, 36},
		{"github-token", "ghr_", alnum, 36, 36},
		{"github-token", "github_pat_", newClass("A-Z", "a-z", "0-9", "_"), 82, 82},
		{"gitlab-token", "glpat-", b64url, 20, 200},
		{"gitlab-token", "gldt-", b64url, 20, 200},
		{"gitlab-token", "glrt-", b64url, 20, 200},
		{"gitlab-token", "glptt-", b64url, 20, 200},
		{"gitlab-token", "glcbt-", b64url, 20, 200},
		{"gitlab-token", "glsoat-", b64url, 20, 200},
		{"npm-token", "npm_", alnum, 36, 36},
		{"pypi-token", "pypi-AgEIcHlwaS5vcmc", b64url, 50, 1000},
		{"docker-hub-token", "dckr_pat_", b64url, 27, 100},
		{"circleci-token", "CCIPAT_", newClass("A-Z", "a-z", "0-9", "_"), 40, 100},
		{"stripe-key", "sk_live_", alnum, 24, 247},
		{"stripe-key", "sk_test_", alnum, 24, 247},
		{"stripe-key", "rk_live_", alnum, 24, 247},
		{"stripe-key", "rk_test_", alnum, 24, 247},
		{"slack-app-token", "xapp-", newClass("A-Z", "a-z", "0-9", "-"), 30, 200},
	} {
		t[r.prefix[0]] = append(t[r.prefix[0]], r)
	}
	return t
}()

// matchRun looks for a secret starting at the run s[a:b] of word bytes.
func matchRun(t text, a, b int) (span, bool) {
	s := t.s
	c := s[a]
	for _, r := range tokenRules[c] {
		if bytes.HasPrefix(s[a:], []byte(r.prefix)) {
			// The token ends where the run does: one followed by more
			// word bytes is something else.
			if end, ok := body(s, a+len(r.prefix), r.body, r.min, r.max); ok && end == b {
				return span{a, end, r.kind}, true
			}
		}
	}
	var end int
	var ok bool
	kind := ""
	switch c {
	case 's':
		kind = "openai-api-key"
		if end, ok = openAIKey(s, a, b); !ok {
			kind = "anthropic-api-key"
			end, ok = anthropicKey(s, a, b)
		}
	case 'e':
		kind = "jwt"
		end, ok = jwt(s, a, b)
	case 'x':
		kind = "slack-token"
		end, ok = slackToken(s, a, b)
	case 'M', 'N', 'O':
		kind = "discord-bot-token"
		end, ok = discordBotToken(s, a, b)
	case '-':
		return privateKey(s, a)
	case '0':
		// A Google refresh token: 1//0 and its body; the run starts at 0.
		kind = "google-oauth-token"
		if a >= 3 && string(s[a-3:a]) == "1//" && (a == 3 || !t.word(a-4)) {
			if end, ok = body(s, a, b64url, 41, 512); ok {
				return span{a - 3, end, kind}, true
			}
		}
	}
	if ok {
		return span{a, end, kind}, true
	}
	if a > 0 {
		switch s[a-1] {
		case '.':
			// A Google access token: ya29. and its body.
			if a >= 5 && string(s[a-5:a-1]) == "ya29" && (a == 5 || !t.word(a-6)) {
				if end, ok := body(s, a, b64url, 30, 4096); ok {
					return span{a - 5, end, "google-oauth-token"}, true
				}
			}
		case ':':
			if sp, ok := telegramToken(t, a); ok {
				return sp, true
			}
		case '/':
			if sp, ok := webhookToken(s, a); ok {
				return sp, true
			}
		}
	}
	return assignment(t, a, b)
}

// openAIKey: sk-proj-, sk-svcacct- or sk-admin- and a body of at least 40,
// or the legacy sk- with the T3BlbkFJ ("OpenAI" in base64) every key of
// that form holds.
func openAIKey(s []byte, a, b int) (int, bool) {
	run := s[a:b]
	if !bytes.HasPrefix(run, []byte("sk-")) || bytes.HasPrefix(run, []byte("sk-ant-")) || bytes.HasPrefix(run, []byte("sk-or-")) {
		return 0, false
	}
	for _, p := range []string{"sk-proj-", "sk-svcacct-", "sk-admin-"} {
		if bytes.HasPrefix(run, []byte(p)) {
			return body(s, a+len(p), b64url, 40, 400)
		}
	}
	if i := bytes.Index(run, []byte("T3BlbkFJ")); i >= 3+16 {
		return body(s, a+3, alnum, 40, 400)
	}
	return 0, false
}

// anthropicKey: sk-ant- then api, admin or oat and two digits, a dash and
// a body of at least 80.
func anthropicKey(s []byte, a, b int) (int, bool) {
	run := s[a:b]
	if !bytes.HasPrefix(run, []byte("sk-ant-")) {
		return 0, false
	}
	i := a + len("sk-ant-")
	n := count(s, i, letters, 5)
	if n < 3 || n > 5 {
		return 0, false
	}
	i += n
	if count(s, i, digits, 2) != 2 || i+2 >= len(s) || s[i+2] != '-' {
		return 0, false
	}
	return body(s, i+3, b64url, 80, 400)
}

// jwt: a signed JSON Web Token: three base64url parts, the first two
// holding JSON objects (eyJ is `{"` in base64), the signature at least 16
// bytes.
func jwt(s []byte, a, b int) (int, bool) {
	if !bytes.HasPrefix(s[a:b], []byte("eyJ")) || b-a < 13 || b >= len(s) || s[b] != '.' {
		return 0, false
	}
	p2, ok := body(s, b+1, b64url, 13, 1<<20)
	if !ok || !bytes.HasPrefix(s[b+1:], []byte("eyJ")) || p2 >= len(s) || s[p2] != '.' {
		return 0, false
	}
	return body(s, p2+1, b64url, 16, 1024)
}

// slackToken: xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr- or xoxe- and a body
// of digits, letters and dashes holding at least two dashes.
func slackToken(s []byte, a, b int) (int, bool) {
	run := s[a:b]
	if len(run) < 5+20 || !bytes.HasPrefix(run, []byte("xox")) || bytes.IndexByte([]byte("bpaosre"), run[3]) < 0 || run[4] != '-' {
		return 0, false
	}
	if bytes.Count(run[5:], []byte("-")) < 2 {
		return 0, false
	}
	return b, true
}

// discordBotToken: the base64 of a snowflake (24 to 28 bytes, starting
// with M, N or O: "1" to "9" in base64), a dot, a 6-byte timestamp, a dot
// and an HMAC of 27 to 38 bytes.
func discordBotToken(s []byte, a, b int) (int, bool) {
	if n := b - a; n < 24 || n > 28 || b >= len(s) || s[b] != '.' {
		return 0, false
	}
	p2, ok := body(s, b+1, b64url, 6, 6)
	if !ok || p2 >= len(s) || s[p2] != '.' {
		return 0, false
	}
	return body(s, p2+1, b64url, 27, 38)
}

// telegramToken: a bot ID of 8 to 10 digits, a colon, AA and 33 bytes; the
// run starts after the colon.
func telegramToken(t text, a int) (span, bool) {
	s := t.s
	i := a - 1 // the colon
	k := i
	for k > 0 && digits[s[k-1]] {
		k--
	}
	// The ID stands alone, or after "bot" in an API URL.
	alone := k == 0 || !t.word(k-1) || (k >= 3 && string(s[k-3:k]) == "bot")
	if n := i - k; n < 8 || n > 10 || !alone || !bytes.HasPrefix(s[a:], []byte("AA")) {
		return span{}, false
	}
	end, ok := body(s, a, b64url, 35, 35)
	return span{k, end, "telegram-bot-token"}, ok
}

// webhookToken: the secret last segment of a Slack webhook
// (hooks.slack.com/services/T…/B…/<secret>) or a Discord one
// (discord.com/api/webhooks/<id>/<secret>); only the secret is redacted.
func webhookToken(s []byte, a int) (span, bool) {
	before := s[:a-1] // up to the slash before the run
	// Discord: /api/webhooks/<digits>/<token>
	k := len(before)
	for k > 0 && digits[before[k-1]] {
		k--
	}
	if n := len(before) - k; n >= 17 && n <= 20 {
		pre := before[:k]
		if bytes.HasSuffix(pre, []byte("discord.com/api/webhooks/")) || bytes.HasSuffix(pre, []byte("discordapp.com/api/webhooks/")) {
			if end, ok := body(s, a, b64url, 60, 100); ok {
				return span{a, end, "discord-webhook"}, true
			}
		}
		return span{}, false
	}
	// Slack: /services/T<id>/B<id>/<token>
	k = len(before)
	for k > 0 && upperNum[before[k-1]] {
		k--
	}
	if k == len(before) || before[k] != 'B' || k < 2 || before[k-1] != '/' {
		return span{}, false
	}
	j := k - 1
	for j > 0 && upperNum[before[j-1]] {
		j--
	}
	if j == k-1 || before[j] != 'T' || !bytes.HasSuffix(before[:j], []byte("hooks.slack.com/services/")) {
		return span{}, false
	}
	if end, ok := body(s, a, alnum, 20, 40); ok {
		return span{a, end, "slack-webhook"}, true
	}
	return span{}, false
}

// privateKeyKind is the kind of a PEM private key block; in a string that
// is (or holds) a Google Cloud service-account key file, the block is that
// key's secret.
func privateKeyKind(s []byte) string {
	if bytes.Contains(s, []byte("service_account")) {
		return "gcp-service-account-key"
	}
	return "private-key"
}

// privateKey: -----BEGIN [TYPE ]PRIVATE KEY[ BLOCK]----- up to the END
// line that closes it, or to the end of the string when it was cut short
// (a truncated tool output still holds most of the key).
func privateKey(s []byte, a int) (span, bool) {
	if !bytes.HasPrefix(s[a:], []byte("-----BEGIN ")) {
		return span{}, false
	}
	i := a + len("-----BEGIN ")
	line := s[i:min(len(s), i+40)]
	e := bytes.Index(line, []byte("-----"))
	if e < 0 {
		return span{}, false
	}
	label := line[:e] // "RSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK", …
	if !bytes.HasSuffix(label, []byte("PRIVATE KEY")) && !bytes.HasSuffix(label, []byte("PRIVATE KEY BLOCK")) {
		return span{}, false
	}
	for _, c := range label {
		if !upperNum[c] && c != ' ' {
			return span{}, false
		}
	}
	rest := i + e + 5
	endLine := append(append([]byte("-----END "), label...), "-----"...)
	if k := bytes.Index(s[rest:], endLine); k >= 0 {
		return span{a, rest + k + len(endLine), privateKeyKind(s)}, true
	}
	return span{a, len(s), privateKeyKind(s)}, true
}

// nameRule is a secret known by the variable or key that names it: a name
// ending in suffix (compared in lower case, without _ and -), an = or :
// (quotes and spaces around it allowed), and a value of exactly the given
// shape.
type nameRule struct {
	kind   string
	suffix string
	value  *class
	n      int    // bytes of value
	pad    string // then exactly this padding
}

var nameRules = []nameRule{
	{"aws-secret-access-key", "secretaccesskey", b64, 40, ""},
	{"aws-secret-access-key", "awssecretkey", b64, 40, ""},
	{"azure-storage-key", "accountkey", b64, 86, "=="},
	{"azure-shared-access-key", "sharedaccesskey", b64, 43, "="},
	{"twilio-auth-token", "twilioauthtoken", hexAny, 32, ""},
	{"twilio-auth-token", "twilioapisecret", alnum, 32, ""},
}

// assignment matches the value assigned to a run that names a secret
// (nameRules): AWS_SECRET_ACCESS_KEY=…, "SecretAccessKey": "…",
// AccountKey=…;.
func assignment(t text, a, b int) (span, bool) {
	s := t.s
	switch s[b-1] | 0x20 {
	case 'y', 'n', 't':
	default:
		return span{}, false
	}
	i := t.skip(t.skip(b, quotes), spaceish)
	if i >= len(s) || (s[i] != '=' && s[i] != ':') {
		return span{}, false
	}
	i = t.skip(t.skip(i+1, spaceish), quotes)
	var norm [64]byte
	n := 0
	for k := b - 1; k >= a && n < len(norm); k-- {
		if c := s[k]; c != '_' && c != '-' {
			norm[len(norm)-1-n] = c | 0x20
			n++
		}
	}
	name := norm[len(norm)-n:]
	for _, r := range nameRules {
		if !bytes.HasSuffix(name, []byte(r.suffix)) {
			continue
		}
		if count(s, i, r.value, r.n) != r.n || !bytes.HasPrefix(s[i+r.n:], []byte(r.pad)) {
			continue
		}
		end := i + r.n + len(r.pad)
		if end < len(s) && (r.value[s[end]] || s[end] == '=') {
			continue
		}
		return span{i, end, r.kind}, true
	}
	return span{}, false
}

// urlPasswords finds the passwords of URLs with credentials,
// scheme://user:password@host: only the password is redacted.
func urlPasswords(s []byte, out []span) []span {
	for at := 0; ; {
		k := bytes.IndexByte(s[at:], '@')
		if k < 0 {
			return out
		}
		at += k
		if sp, ok := urlPassword(s, at); ok {
			out = append(out, sp)
		}
		at++
	}
}

// urlPassword checks the @ at s[at] for a URL's userinfo with a password
// before it.
func urlPassword(s []byte, at int) (span, bool) {
	p := at
	for p > 0 && upwd[s[p-1]] && s[p-1] != ':' && at-p < 256 {
		p--
	}
	if p == at || p == 0 || s[p-1] != ':' {
		return span{}, false // no password, or too long to be one
	}
	u := p - 1 // the colon between user and password
	k := u
	for k > 0 && upwd[s[k-1]] && s[k-1] != ':' && u-k < 256 {
		k--
	}
	if k < 3 || string(s[k-3:k]) != "://" {
		return span{}, false
	}
	sc := k - 3 // scheme: a letter, then letters, digits, + - .
	j := sc
	for j > 0 && (alnum[s[j-1]] || s[j-1] == '+' || s[j-1] == '-' || s[j-1] == '.') {
		j--
	}
	if j == sc || !letters[s[j]] {
		return span{}, false
	}
	if isMarker(s, p, at) {
		return span{}, false
	}
	return span{p, at, "url-password"}, true
}

// connPasswords finds the password of a connection string: a list of
// key=value pairs separated by ';' (ADO.NET, ODBC, JDBC) holding
// Password= or Pwd= and a key that names a server, a database or a user.
func connPasswords(t text, out []span) []span {
	s := t.s
	n := len(out)
	for i := 0; ; {
		k := bytes.IndexByte(s[i:], '=')
		if k < 0 {
			break
		}
		eq := i + k
		i = eq + 1
		// Password and Pwd end in d: most '=' of code are passed here,
		// before their key is read.
		d := eq
		for d > 0 && s[d-1] == ' ' {
			d--
		}
		if d == 0 || s[d-1]|0x20 != 'd' {
			continue
		}
		key, ok := connKey(t, eq)
		if !ok || !equalFold(key, "password") && !equalFold(key, "pwd") {
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
	if len(out) > n && !hasConnKey(t) {
		return out[:n]
	}
	return out
}

// hasConnKey reports whether a key before an '=' in t names a connection
// string's server, database or user (isConnKey): what makes its
// passwords a connection string's.
func hasConnKey(t text) bool {
	s := t.s
	for i := 0; ; {
		k := bytes.IndexByte(s[i:], '=')
		if k < 0 {
			return false
		}
		eq := i + k
		i = eq + 1
		if key, ok := connKey(t, eq); ok && isConnKey(key) {
			return true
		}
	}
}

// connKey returns the key before the '=' at s[eq]: letters and single
// spaces ("User ID"), at the start of s or after ';', a space or a quote.
func connKey(t text, eq int) ([]byte, bool) {
	s := t.s
	letter := func(i int) bool { return letters[s[i]] && t.word(i) }
	n := eq
	for n > 0 && s[n-1] == ' ' {
		n--
	}
	m := n
	for m > 0 && n-m < 16 && (letter(m-1) || s[m-1] == ' ' && m > 1 && letter(m-2)) {
		m--
	}
	for m < n && s[m] == ' ' {
		m++
	}
	if m == n {
		return nil, false
	}
	if m > 0 {
		// (An escaped quote, \", ends in a quote too.)
		if c := s[m-1]; c != ';' && c != ' ' && c != '"' && c != '\'' {
			return nil, false
		}
	}
	return s[m:n], true
}

// isConnKey reports whether key (or its last word) names a connection
// string's server, database or user.
func isConnKey(key []byte) bool {
	for _, k := range []string{"server", "data source", "host", "user id", "user", "uid", "initial catalog", "database"} {
		if len(key) >= len(k) && equalFold(key[len(key)-len(k):], k) {
			return true
		}
	}
	return false
}

// equalFold reports whether b equals lower, an ASCII lower-case string,
// ignoring the case of b's letters.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c |= 0x20
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
