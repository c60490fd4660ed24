package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"filippo.io/age"
)

// KeySize is the size of a data key: AES-256.
const KeySize = 32

// DataKey is a session's random data key, numbered: a session starts with
// key 0, and each rotation adds the next.
type DataKey struct {
	id   uint32
	key  [KeySize]byte
	aead cipher.AEAD
}

// NewKey returns a new random data key numbered id.
func NewKey(id uint32) (*DataKey, error) {
	k := &DataKey{id: id}
	if _, err := rand.Read(k.key[:]); err != nil {
		return nil, fmt.Errorf("seal: a random data key: %w", err)
	}
	return k, k.init()
}

// keyFrom returns the data key id with the given bytes (tests: a fixed
// key makes a fuzz corpus replayable).
func keyFrom(id uint32, b [KeySize]byte) *DataKey {
	k := &DataKey{id: id, key: b}
	if err := k.init(); err != nil {
		panic(err) // AES accepts every 32-byte key
	}
	return k
}

func (k *DataKey) init() error {
	block, err := aes.NewCipher(k.key[:])
	if err != nil {
		return err
	}
	k.aead, err = cipher.NewGCM(block)
	return err
}

// ID returns the key's number.
func (k *DataKey) ID() uint32 { return k.id }

// envelopePlain is what an envelope's age file holds: a label, the
// session ID and the key's number (so that an envelope copied from
// another session or key number is refused), then the key.
func envelopePlain(session string, k *DataKey) []byte {
	b := append([]byte(envelopeLabel), session...)
	b = binary.BigEndian.AppendUint32(b, k.id)
	return append(b, k.key[:]...)
}

const envelopeLabel = "sessionlog-sealed/1 data key\n"

// Wrap wraps the data key of session for the recipients: the age files
// to store as key records (AppendKeyRecord), one for all the X25519 and
// other public-key recipients and one for each passphrase (age allows a
// passphrase only alone).
func Wrap(session string, k *DataKey, recipients ...age.Recipient) ([][]byte, error) {
	if len(recipients) == 0 {
		return nil, errors.New("seal: wrapping a data key needs at least one recipient")
	}
	var public []age.Recipient
	var groups [][]age.Recipient
	for _, r := range recipients {
		if _, ok := r.(*age.ScryptRecipient); ok {
			groups = append(groups, []age.Recipient{r})
		} else {
			public = append(public, r)
		}
	}
	if len(public) > 0 {
		groups = append([][]age.Recipient{public}, groups...)
	}
	out := make([][]byte, 0, len(groups))
	for _, g := range groups {
		var buf bytes.Buffer
		w, err := age.Encrypt(&buf, g...)
		if err != nil {
			return nil, fmt.Errorf("seal: wrapping data key %d: %w", k.id, err)
		}
		if _, err := w.Write(envelopePlain(session, k)); err != nil {
			return nil, fmt.Errorf("seal: wrapping data key %d: %w", k.id, err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("seal: wrapping data key %d: %w", k.id, err)
		}
		out = append(out, buf.Bytes())
	}
	return out, nil
}

// ErrNoKey is wrapped by every *KeyError.
var ErrNoKey = errors.New("seal: data key unavailable")

// KeyError says why a sealed session cannot be read: a data key that no
// identity given opens. It wraps ErrNoKey.
type KeyError struct {
	Path    string
	Session string
	Key     uint32
	// Envelopes is how many envelopes of the key were found; Shredded how
	// many of them were shredded.
	Envelopes, Shredded int
	// Identities is how many identities were given.
	Identities int
	// Err is the last error an envelope gave other than a mismatch (a
	// damaged envelope, a wrong binding), or nil.
	Err error
}

func (e *KeyError) Error() string {
	where := ""
	if e.Path != "" {
		where = " (" + strconv.Quote(e.Path) + ")"
	}
	head := fmt.Sprintf("seal: sealed session %s%s: data key %d cannot be opened: ", e.Session, where, e.Key)
	switch {
	case e.Envelopes == 0:
		return head + "the file holds no envelope of it before the rows it seals"
	case e.Shredded == e.Envelopes:
		return head + "its envelopes were shredded; the content cannot be recovered"
	case e.Identities == 0:
		return head + "no identity was given: reading it needs the age identity (or passphrase) of one of its recipients"
	case e.Err != nil:
		return head + e.Err.Error()
	}
	return head + fmt.Sprintf("none of the %d identities given is a recipient of its %d envelope(s)", e.Identities, e.Envelopes-e.Shredded)
}

func (e *KeyError) Unwrap() error { return ErrNoKey }

// Keyring holds the data keys of one sealed session that its identities
// opened. A Reader adds to it the envelopes it meets; a caller that wants
// to read a session whose recipient was added after its first rows (the
// envelope stands after the rows it opens) adds every envelope first
// (Envelopes, Add). It is safe for concurrent use.
type Keyring struct {
	session string
	ids     []age.Identity

	mu   sync.Mutex
	keys map[uint32]*DataKey
	seen map[uint32]*KeyError // envelopes tried, per key not yet opened
}

// NewKeyring returns a keyring of session that opens envelopes with ids.
func NewKeyring(session string, ids ...age.Identity) *Keyring {
	return &Keyring{session: session, ids: ids, keys: map[uint32]*DataKey{}, seen: map[uint32]*KeyError{}}
}

// AddKey adds a data key known to the caller (the writer that made it).
func (kr *Keyring) AddKey(k *DataKey) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.keys[k.id] = k
	delete(kr.seen, k.id)
}

// Add tries to open an envelope. It reports nothing: a key no identity
// opens is reported when a row sealed with it is read (Key).
func (kr *Keyring) Add(env Envelope) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if _, ok := kr.keys[env.Key]; ok {
		return
	}
	ke := kr.seen[env.Key]
	if ke == nil {
		ke = &KeyError{Session: kr.session, Key: env.Key, Identities: len(kr.ids)}
		kr.seen[env.Key] = ke
	}
	ke.Envelopes++
	if env.Shredded {
		ke.Shredded++
		return
	}
	if len(kr.ids) == 0 {
		return
	}
	k, err := kr.open(env)
	if err != nil {
		var nm *age.NoIdentityMatchError
		if !errors.As(err, &nm) {
			ke.Err = err
		}
		return
	}
	kr.keys[env.Key] = k
	delete(kr.seen, env.Key)
}

func (kr *Keyring) open(env Envelope) (*DataKey, error) {
	r, err := age.Decrypt(bytes.NewReader(env.Age), kr.ids...)
	if err != nil {
		return nil, err
	}
	plain, err := io.ReadAll(io.LimitReader(r, 1024))
	if err != nil {
		return nil, fmt.Errorf("a damaged envelope: %w", err)
	}
	k := &DataKey{id: env.Key}
	want := envelopePlain(kr.session, k)
	if len(plain) != len(want) || !bytes.Equal(plain[:len(want)-KeySize], want[:len(want)-KeySize]) {
		return nil, errors.New("an envelope of another session or key number")
	}
	copy(k.key[:], plain[len(want)-KeySize:])
	return k, k.init()
}

// Latest returns the data key of the highest number the keyring holds:
// the one a writer seals with (a session's keys are numbered from 0, a
// rotation adds the next), or false when it holds none.
func (kr *Keyring) Latest() (*DataKey, bool) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	var out *DataKey
	for _, k := range kr.keys {
		if out == nil || k.id > out.id {
			out = k
		}
	}
	return out, out != nil
}

// Session returns the session the keyring is of.
func (kr *Keyring) Session() string { return kr.session }

// Key returns data key id, or a *KeyError saying why it is not there.
func (kr *Keyring) Key(id uint32) (*DataKey, error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if k, ok := kr.keys[id]; ok {
		return k, nil
	}
	if ke := kr.seen[id]; ke != nil {
		c := *ke
		return nil, &c
	}
	return nil, &KeyError{Session: kr.session, Key: id, Identities: len(kr.ids)}
}
