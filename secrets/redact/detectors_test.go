package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fill returns n bytes from charset, deterministic for a seed: samples of
// the right shape are built here, not written out, so that no file of the
// repository holds anything a secret scanner would flag.
func fill(n int, charset string, seed uint32) string {
	b := make([]byte, n)
	x := seed*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = charset[int(x%uint32(len(charset)))]
	}
	return string(b)
}

const (
	csAlnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	csB64url = csAlnum + "-_"
	csB64    = csAlnum + "+/"
	csHex    = "0123456789abcdef"
	csB32    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)

// detectorCase is a real-shaped secret in the text around it, and a near
// miss that must be left alone.
type detectorCase struct {
	kind     string
	before   string // text before the secret
	secret   string // what is replaced
	after    string
	nearMiss string
}

func detectorCases() []detectorCase {
	pem := "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC" + fill(64, csB64, 1) + "\n" + fill(64, csB64, 2) + "\n" + fill(20, csB64, 3) + "=="
	jwtSample := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	return []detectorCase{
		{"aws-access-key-id", "aws_access_key_id = ", "AKIA" + fill(16, csB32, 4), "\n", "aws_access_key_id = AKIA" + fill(15, csB32, 4) + " and AKIA" + fill(16, csB32, 4) + "1"},
		{"aws-access-key-id", `{"AccessKeyId": "`, "ASIA" + fill(16, csB32, 5), `"}`, "ASIA" + strings.ToLower(fill(16, csB32, 5))},
		{"aws-secret-access-key", "aws_secret_access_key = ", fill(40, csB64, 6), "\n", "aws_secret_access_key = " + fill(39, csB64, 6) + "\nsecret = " + fill(40, csB64, 6)},
		{"aws-secret-access-key", `"SecretAccessKey": "`, fill(40, csB64, 7), `",`, `"SecretAccessKeyId": "` + fill(40, csB64, 7) + `"`},
		{"gcp-api-key", "key=", "AIza" + fill(35, csB64url, 8), "&q=1", "AIza" + fill(34, csB64url, 8)},
		{"gcp-oauth-client-secret", `"client_secret":"`, "GOCSPX-" + fill(28, csB64url, 9), `"`, "GOCSPX-" + fill(27, csB64url, 9)},
		{"google-oauth-token", "Authorization: Bearer ", "ya29." + fill(120, csB64url, 10), "\n", "ya29." + fill(12, csB64url, 10) + " and xya29." + fill(120, csB64url, 10)},
		{"google-oauth-token", `"refresh_token": "`, "1//0" + fill(100, csB64url, 11), `"`, "1//0" + fill(20, csB64url, 11)},
		{"gcp-service-account-key", `{"type": "service_account", "private_key": "`, `-----BEGIN PRIVATE KEY-----\n` + strings.ReplaceAll(pem, "\n", `\n`) + `\n-----END PRIVATE KEY-----`, `\n", "client_email": "x@p.iam.gserviceaccount.com"}`, `{"type": "service_account", "private_key_id": "` + fill(40, csHex, 12) + `"}`},
		{"azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=", fill(86, csB64, 13) + "==", ";EndpointSuffix=core.windows.net", "AccountName=acct;AccountKey=" + fill(80, csB64, 13) + "==;"},
		{"azure-shared-access-key", "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=", fill(43, csB64, 14) + "=", "", "SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + fill(42, csB64, 14) + "="},
		{"openai-api-key", "OPENAI_API_KEY=", "sk-proj-" + fill(150, csB64url, 15), "\n", "sk-proj-" + fill(30, csB64url, 15) + " sk-" + fill(48, csAlnum, 15)},
		{"openai-api-key", "key: ", "sk-" + fill(20, csAlnum, 16) + "T3BlbkFJ" + fill(20, csAlnum, 17), "", "sk-" + fill(10, csAlnum, 16) + "T3BlbkFJ" + fill(20, csAlnum, 17)},
		{"anthropic-api-key", "x-api-key: ", "sk-ant-api03-" + fill(93, csB64url, 18) + "AA", "\r\n", "sk-ant-api03-" + fill(40, csB64url, 18) + " sk-ant-" + fill(95, csB64url, 18)},
		{"openrouter-api-key", "Bearer ", "sk-or-v1-" + fill(64, csHex, 19), "", "sk-or-v1-" + fill(63, csHex, 19)},
		{"groq-api-key", "GROQ_API_KEY=", "gsk_" + fill(52, csAlnum, 20), "", "gsk_" + fill(51, csAlnum, 20)},
		{"huggingface-token", "HF_TOKEN=", "hf_" + fill(34, csAlnum, 21), "", "hf_" + fill(33, csAlnum, 21)},
		{"xai-api-key", "XAI_API_KEY=", "xai-" + fill(80, csAlnum, 22), "", "xai-" + fill(79, csAlnum, 22)},
		{"replicate-token", "REPLICATE_API_TOKEN=", "r8_" + fill(37, csAlnum, 23), "", "r8_" + fill(36, csAlnum, 23)},
		{"perplexity-api-key", "PPLX=", "pplx-" + fill(48, csAlnum, 24), "", "pplx-" + fill(47, csAlnum, 24)},
		{"github-token", "remote: https://x-access-token:", "ghs_" + fill(36, csAlnum, 25), "@github.com/o/r.git", "ghs_" + fill(35, csAlnum, 25) + " ghx_" + fill(36, csAlnum, 25)},
		{"github-token", "GITHUB_TOKEN=", "github_pat_" + fill(22, csAlnum, 26) + "_" + fill(59, csAlnum, 27), "\n", "github_pat_" + fill(22, csAlnum, 26)},
		{"gitlab-token", "PRIVATE-TOKEN: ", "glpat-" + fill(20, csB64url, 28), "", "glpat-" + fill(19, csB64url, 28)},
		{"npm-token", "//registry.npmjs.org/:_authToken=", "npm_" + fill(36, csAlnum, 29), "\n", "npm_" + fill(35, csAlnum, 29)},
		{"pypi-token", "password = ", "pypi-AgEIcHlwaS5vcmc" + fill(70, csB64url, 30), "\n", "pypi-AgEIcHlwaS5vcmc" + fill(10, csB64url, 30) + " pypi-" + fill(80, csB64url, 30)},
		{"docker-hub-token", "docker login -p ", "dckr_pat_" + fill(27, csB64url, 31), "", "dckr_pat_" + fill(26, csB64url, 31)},
		{"circleci-token", "CIRCLE_TOKEN=", "CCIPAT_" + fill(22, csAlnum, 32) + "_" + fill(40, csHex, 33), "", "CCIPAT_" + fill(20, csAlnum, 32)},
		{"stripe-key", "STRIPE_SECRET_KEY=", "sk_live_" + fill(99, csAlnum, 34), "", "sk_live_" + fill(23, csAlnum, 34) + " pk_live_" + fill(99, csAlnum, 34)},
		{"slack-token", "SLACK_BOT_TOKEN=", "xoxb-1234567890123-1234567890123-" + fill(24, csAlnum, 35), "", "xoxb-" + fill(30, csAlnum, 35) + " xoxz-1234567890123-1234567890123-" + fill(24, csAlnum, 35)},
		{"slack-app-token", "SLACK_APP_TOKEN=", "xapp-1-A0123456789-1234567890123-" + fill(64, csHex, 36), "", "xapp-1-A0123"},
		{"slack-webhook", "curl -X POST https://hooks.slack.com/services/T00000000/B00000000/", fill(24, csAlnum, 37), " -d @msg.json", "https://hooks.slack.com/services/T00000000/" + fill(24, csAlnum, 37) + " https://example.com/services/T00000000/B00000000/" + fill(24, csAlnum, 37)},
		{"discord-bot-token", "Authorization: Bot ", "MTIzNDU2Nzg5MDEyMzQ1Njc4." + fill(6, csB64url, 38) + "." + fill(38, csB64url, 39), "", "MTIzNDU2Nzg5MDEyMzQ1Njc4.abc.def and version 1.2.3"},
		{"discord-webhook", "https://discord.com/api/webhooks/123456789012345678/", fill(68, csB64url, 40), "", "https://example.com/api/webhooks/123456789012345678/" + fill(68, csB64url, 40)},
		{"telegram-bot-token", "https://api.telegram.org/bot", "123456789:AA" + fill(33, csB64url, 41), "/getMe", "12345:AA" + fill(33, csB64url, 41) + " 123456789:AB" + fill(33, csB64url, 41)},
		{"twilio-auth-token", "TWILIO_AUTH_TOKEN=", fill(32, csHex, 42), "\n", "AUTH_TOKEN=" + fill(32, csHex, 42) + " TWILIO_AUTH_TOKEN=" + fill(31, csHex, 42)},
		{"private-key", "cat id_rsa\n", "-----BEGIN RSA PRIVATE KEY-----\n" + pem + "\n-----END RSA PRIVATE KEY-----", "\n$ ", "-----BEGIN CERTIFICATE-----\n" + pem + "\n-----END CERTIFICATE-----"},
		{"private-key", "key (cut short): ", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + pem, "", "-----BEGIN PUBLIC KEY-----\n" + pem},
		{"jwt", "Authorization: Bearer ", jwtSample, "\n", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0. and eyJhbGciOiJIUzI1NiJ9.x.y"},
		{"url-password", "DATABASE_URL=postgres://admin:", "s3cr3t-P4ss", "@db.internal:5432/app", "https://user@example.com/a https://example.com/a:b@c mailto:x@y.z http://host:8080/"},
		{"conn-password", "Server=tcp:sql.example.com,1433;Initial Catalog=app;User ID=sa;Password=", "Hunter2!x", ";Encrypt=True", "The Password= field; see the docs"},
	}
}

// TestDetectors runs every detector on its real-shaped sample, in text
// around it, and on its near miss: the secret, and only it, is replaced;
// the near miss is left alone.
func TestDetectors(t *testing.T) {
	r := New()
	seen := map[string]bool{}
	for _, c := range detectorCases() {
		t.Run(c.kind, func(t *testing.T) {
			seen[c.kind] = true
			text := c.before + c.secret + c.after
			data, _ := json.Marshal(map[string]string{"output": text})
			out, changed := r.Data(data)
			require.True(t, changed, "sample not redacted: %s", text)
			var got map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(out, &got))
			var s string
			require.NoError(t, json.Unmarshal(got["output"], &s))
			require.Equal(t, c.before+Marker(c.kind)+c.after, s)
			fields, err := Fields(out)
			require.NoError(t, err)
			require.Equal(t, []Field{{Path: []string{"output"}, Kinds: []string{c.kind}}}, fields)

			miss, _ := json.Marshal(map[string]string{"output": c.nearMiss})
			out, changed = r.Data(miss)
			require.False(t, changed, "near miss redacted: %s", out)
			require.Equal(t, miss, out)
		})
	}
	for _, d := range Detectors() {
		require.True(t, seen[d.Kind], "detector %s has no test case", d.Kind)
	}
}
