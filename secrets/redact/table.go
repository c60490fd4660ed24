package redact

// Detector documents one built-in detector: the kind its markers name,
// what it matches and why that is specific enough to redact without
// asking (docs/format.md, "Redaction" holds the same table).
type Detector struct {
	Kind    string
	Matches string
	Why     string
}

// Detectors returns the table of the built-in detectors.
func Detectors() []Detector { return append([]Detector(nil), detectors...) }

var detectors = []Detector{
	{"aws-access-key-id", "AKIA, ASIA, ABIA or ACCA + 16 of A–Z 2–7", "fixed prefixes of AWS key IDs, base32 body of fixed length"},
	{"aws-secret-access-key", "a name ending in secret_access_key or aws_secret_key, = or :, 40 base64 bytes", "the name says what it is; the length is fixed"},
	{"gcp-api-key", "AIza + 35 base64url", "Google's fixed prefix and length"},
	{"gcp-oauth-client-secret", "GOCSPX- + 28 base64url", "fixed prefix and length"},
	{"google-oauth-token", "ya29. + 30 or more base64url (access), 1//0 + 40 or more (refresh)", "Google's fixed prefixes"},
	{"gcp-service-account-key", "a private key block in a string holding service_account", "the key file's secret is its PEM key"},
	{"azure-storage-key", "AccountKey= + 86 base64 + ==", "the connection string's key name; a 512-bit key's exact length"},
	{"azure-shared-access-key", "SharedAccessKey= + 43 base64 + =", "the key name; a 256-bit key's exact length"},
	{"openai-api-key", "sk-proj-, sk-svcacct-, sk-admin- + 40 or more; legacy sk- keys holding T3BlbkFJ", "fixed prefixes; T3BlbkFJ is \"OpenAI\" in base64"},
	{"anthropic-api-key", "sk-ant- + api, admin or oat + 2 digits + - + 80 or more base64url", "fixed prefix and structure"},
	{"openrouter-api-key", "sk-or-v1- + 64 hex", "fixed prefix and length"},
	{"groq-api-key", "gsk_ + 52 alphanumerics", "fixed prefix and length"},
	{"huggingface-token", "hf_ + 34 alphanumerics", "fixed prefix and length"},
	{"xai-api-key", "xai- + 80 alphanumerics", "fixed prefix and length"},
	{"replicate-token", "r8_ + 37 alphanumerics", "fixed prefix and length"},
	{"perplexity-api-key", "pplx- + 48 alphanumerics", "fixed prefix and length"},
	{"github-token", "ghp_, gho_, ghu_, ghs_, ghr_ + 36 alphanumerics; github_pat_ + 82", "GitHub's fixed prefixes and lengths"},
	{"gitlab-token", "glpat-, gldt-, glrt-, glptt-, glcbt-, glsoat- + 20 or more base64url", "GitLab's fixed prefixes"},
	{"npm-token", "npm_ + 36 alphanumerics", "fixed prefix and length"},
	{"pypi-token", "pypi-AgEIcHlwaS5vcmc + 50 or more base64url", "the prefix encodes pypi.org"},
	{"docker-hub-token", "dckr_pat_ + 27 or more base64url", "fixed prefix"},
	{"circleci-token", "CCIPAT_ + 40 or more", "fixed prefix"},
	{"stripe-key", "sk_live_, sk_test_, rk_live_, rk_test_ + 24 or more alphanumerics", "fixed prefixes"},
	{"slack-token", "xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-, xoxe- + 20 or more, two dashes at least", "fixed prefixes and structure"},
	{"slack-app-token", "xapp- + 30 or more", "fixed prefix"},
	{"slack-webhook", "the last segment of hooks.slack.com/services/T…/B…/…", "the URL's fixed structure; only the secret segment"},
	{"discord-bot-token", "M, N or O + 23–27 base64url . 6 . 27–38", "a snowflake in base64, a timestamp and an HMAC, dot-separated"},
	{"discord-webhook", "the last segment of discord.com/api/webhooks/<id>/…", "the URL's fixed structure"},
	{"telegram-bot-token", "8–10 digits : AA + 33 base64url", "bot ID, colon, fixed-length secret"},
	{"twilio-auth-token", "a name ending in twilio_auth_token or twilio_api_secret, = or :, 32 hex or alphanumerics", "the name says what it is; Twilio's secrets have no prefix"},
	{"private-key", "-----BEGIN … PRIVATE KEY----- to its END line (or the string's end)", "PEM armour"},
	{"jwt", "eyJ… . eyJ… . a signature of 16 or more base64url", "a JSON header and payload in base64url, signed"},
	{"url-password", "the password of scheme://user:password@host", "userinfo with a password; only the password"},
	{"conn-password", "the value of Password= or Pwd= in a ;-separated connection string with a server, host, database or user key", "the connection string's structure; only the password"},
}
