package provider

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"

	"github.com/sessionlog/sessionlog/secrets/redact"
)

// Keys seal the originals of the secrets found in provider records and
// open them again (docs/format.md §11): an age X25519 identity that the
// agent holds, outside the store. Keys are safe for concurrent use.
type Keys struct {
	recipients []age.Recipient
	identities []age.Identity
}

// NewKeys returns Keys that seal to id's recipient and open with id.
func NewKeys(id *age.X25519Identity) *Keys {
	return &Keys{recipients: []age.Recipient{id.Recipient()}, identities: []age.Identity{id}}
}

// ParseKeys reads an age identity file (as logtool keygen writes one):
// the first identity seals, every identity opens.
func ParseKeys(r io.Reader) (*Keys, error) {
	ids, err := age.ParseIdentities(r)
	if err != nil {
		return nil, fmt.Errorf("provider: keys: %w", err)
	}
	k := &Keys{identities: ids}
	for _, id := range ids {
		if x, ok := id.(*age.X25519Identity); ok {
			k.recipients = append(k.recipients, x.Recipient())
			break
		}
	}
	if len(k.recipients) == 0 {
		return nil, errors.New("provider: keys: the file holds no X25519 identity to seal with")
	}
	return k, nil
}

// IdentityEnv names the environment variable whose value, when set, is
// the path of the identity file DefaultKeys loads (the same one logtool's
// --identity defaults to).
const IdentityEnv = "SESSIONLOG_IDENTITY"

// DefaultKeyFile returns where DefaultKeys keeps its identity when
// IdentityEnv is not set: sessionlog/identity in the user's configuration
// folder (os.UserConfigDir), outside any store.
func DefaultKeyFile() (string, error) {
	if p := os.Getenv(IdentityEnv); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("provider: keys: %w", err)
	}
	return filepath.Join(dir, "sessionlog", "identity"), nil
}

// DefaultKeys loads the identity at DefaultKeyFile, making one there
// (mode 0600, its folder 0700) when there is none, so that the defaults
// keep secrets out of the store's files and still resume exactly. Copy the
// file to wherever the agent resumes; without it, the secrets of its
// sessions' provider records stay redacted.
func DefaultKeys() (*Keys, error) {
	path, err := DefaultKeyFile()
	if err != nil {
		return nil, err
	}
	return LoadOrCreateKeys(path)
}

// LoadOrCreateKeys loads the identity file at path, or makes a new
// identity there when the file does not exist.
func LoadOrCreateKeys(path string) (*Keys, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		id, gerr := age.GenerateX25519Identity()
		if gerr != nil {
			return nil, fmt.Errorf("provider: keys: %w", gerr)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("provider: keys: %w", err)
		}
		text := "# sessionlog provider-record key; public key: " + id.Recipient().String() + "\n" + id.String() + "\n"
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return LoadOrCreateKeys(path) // another process made it first
		}
		if err != nil {
			return nil, fmt.Errorf("provider: keys: %w", err)
		}
		_, werr := f.WriteString(text)
		serr := f.Sync()
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = serr
		}
		if werr != nil {
			return nil, fmt.Errorf("provider: keys: %w", werr)
		}
		return NewKeys(id), nil
	}
	if err != nil {
		return nil, fmt.Errorf("provider: keys: %w", err)
	}
	return ParseKeys(bytes.NewReader(b))
}

// Recipient returns the public key originals are sealed to.
func (k *Keys) Recipient() string {
	if len(k.recipients) == 0 {
		return ""
	}
	if x, ok := k.recipients[0].(*age.X25519Recipient); ok {
		return x.String()
	}
	return ""
}

// seal encrypts an original to the keys' recipients, as text no detector
// matches.
func (k *Keys) seal(orig []byte) (string, error) {
	if len(k.recipients) == 0 {
		return "", errors.New("provider: keys: no recipient to seal to")
	}
	var b bytes.Buffer
	w, err := age.Encrypt(&b, k.recipients...)
	if err != nil {
		return "", err
	}
	if _, err := w.Write(orig); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return redact.SealedText(b.Bytes()), nil
}

// open decrypts what seal made.
func (k *Keys) open(text string) ([]byte, error) {
	ct, err := redact.SealedBytes(text)
	if err != nil {
		return nil, err
	}
	r, err := age.Decrypt(bytes.NewReader(ct), k.identities...)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", ErrNoKey, strings.TrimPrefix(err.Error(), "age: "))
	}
	return io.ReadAll(r)
}

// ErrNoKey is returned, wrapped, when a sealed original cannot be opened
// with the keys given (or none were).
var ErrNoKey = errors.New("provider: no key opens a sealed original")
