package sealing

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"filippo.io/age"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// ErrNoRecipient: a fork of a sealed session is sealed, and there is no
// one to seal it for. Stores wrap it in handle.ErrSealed.
var ErrNoRecipient = errors.New("a fork of a sealed session is sealed, and no recipient was given (WithRecipients) nor an X25519 identity whose recipient it could be")

// Ask is what a Create asked of a new session's sealing (WithRecipients).
type Ask struct {
	Sealed  bool            // sealing (WithRecipients) or Config.SealAs was asked
	SealFor []age.Recipient // WithRecipients' recipients
	SealAs  bool            // Config.SealAs was given: the caller plans with its key records
}

// Recipients returns whom a new session is sealed for, or nil for a
// clear one: those the create asked (WithRecipients), else the store's (WithRecipients); a
// fork of a sealed session (parentSealed) is sealed whatever the options
// — its derived data holds its parent's content — by default for the
// recipients of the store's X25519 identities (ErrNoRecipient when it
// has none).
func Recipients(a Ask, parentSealed bool, store []age.Recipient, ids []age.Identity) ([]age.Recipient, error) {
	switch {
	case a.Sealed && !a.SealAs && len(a.SealFor) == 0:
		return nil, errors.New("handle: sealing was asked with no recipient (WithRecipients())")
	case len(a.SealFor) > 0:
		return a.SealFor, nil
	case len(store) > 0:
		return store, nil
	case !parentSealed:
		return nil, nil
	}
	var rs []age.Recipient
	for _, id := range ids {
		switch i := id.(type) {
		case *age.X25519Identity:
			rs = append(rs, i.Recipient())
		case *age.HybridIdentity:
			rs = append(rs, i.Recipient())
		}
	}
	if len(rs) == 0 {
		return nil, ErrNoRecipient
	}
	return rs, nil
}

// Plan is how a sealed log is written: the records before its rows (the
// clear header and the key records, in its layout), the head they make,
// the data key and the Sealer of its rows (the header row first).
type Plan struct {
	Records []byte
	Head    seal.Head
	Key     *seal.DataKey
	Sealer  *seal.Sealer
}

// NewPlan plans a new sealed session whose header is hdr, in layout: a
// new data key 0 wrapped for rs.
func NewPlan(hdr eventlog.Header, layout seal.Encoding, rs []age.Recipient) (*Plan, error) {
	key, err := seal.NewKey(0)
	if err != nil {
		return nil, err
	}
	wrapped, err := seal.Wrap(hdr.ID, key, rs...)
	if err != nil {
		return nil, err
	}
	envs := make([]seal.Envelope, len(wrapped))
	for i, w := range wrapped {
		envs[i] = seal.Envelope{Key: 0, Age: w}
	}
	return PlanWith(hdr, layout, envs, key)
}

// PlanFrom plans a rewrite of a sealed session whose key records are envs
// (a full read's) and whose keyring is kr: the same key records, shredded
// ones left out, and every row sealed with the newest key, which kr must
// hold (a *seal.KeyError naming path if not).
func PlanFrom(hdr eventlog.Header, layout seal.Encoding, envs []seal.Envelope, kr *seal.Keyring, path string) (*Plan, error) {
	var keep []seal.Envelope
	for _, e := range envs {
		if !e.Shredded {
			keep = append(keep, e)
		}
	}
	key, err := kr.Key(Newest(envs))
	if err != nil {
		return nil, NoKey(err, path)
	}
	return PlanWith(hdr, layout, keep, key)
}

// PlanWith plans a log holding the key records envs, its rows sealed
// with key (Config.SealAs: a copy of a sealed session).
func PlanWith(hdr eventlog.Header, layout seal.Encoding, envs []seal.Envelope, key *seal.DataKey) (*Plan, error) {
	clear := seal.ClearOf(hdr)
	records, err := seal.AppendClearHeader(nil, layout, clear)
	if err != nil {
		return nil, err
	}
	p := &Plan{Head: seal.Head{Encoding: layout, Clear: clear}, Key: key, Sealer: seal.NewSealer(hdr.ID, layout, key)}
	for _, e := range envs {
		off := len(records)
		records = seal.AppendKeyRecord(records, layout, e.Key, e.Age)
		n := len(records) - off
		if layout == seal.Raw {
			n-- // a raw record's length leaves out its '\n'
		}
		p.Head.Envelopes = append(p.Head.Envelopes, seal.Envelope{Key: e.Key, Age: e.Age, Offset: int64(off), Len: int64(n)})
	}
	p.Records, p.Head.End = records, int64(len(records))
	return p, nil
}

// Start returns the first bytes of a raw sealed log planned by p: its
// records, then the header row (one line, with its '\n') sealed.
func (p *Plan) Start(headerRow []byte) ([]byte, error) {
	return p.Sealer.AppendRows(append([]byte(nil), p.Records...), headerRow)
}

// Newest returns the number of the newest data key envs wrap: the one a
// writer seals with.
func Newest(envs []seal.Envelope) uint32 {
	newest := uint32(0)
	for _, e := range envs {
		newest = max(newest, e.Key)
	}
	return newest
}

// NoKey names path in a *seal.KeyError err wraps, and returns err.
func NoKey(err error, path string) error {
	var ke *seal.KeyError
	if errors.As(err, &ke) {
		ke.Path = path
	}
	return err
}

// Record is where a sealed record starts in SealRows' output, and the
// seq of the first event of the row it holds.
type Record struct {
	Off int
	Seq int64
}

// SealRows appends rows (complete rows, each ending in '\n') to dst
// sealed by s, one raw record a row, and appends to recs where each
// record starts in dst and the seq its row holds.
func SealRows(s *seal.Sealer, dst, rows []byte, recs []Record) ([]byte, []Record, error) {
	for len(rows) > 0 {
		n := bytes.IndexByte(rows, '\n') + 1
		if n == 0 {
			return dst, recs, fmt.Errorf("sealing: a row without its end")
		}
		seq, ok := RowSeq(rows[:n])
		if !ok {
			return dst, recs, fmt.Errorf("sealing: a row without its seq")
		}
		recs = append(recs, Record{Off: len(dst), Seq: seq})
		var err error
		if dst, err = s.AppendRows(dst, rows[:n]); err != nil {
			return dst, recs, err
		}
		rows = rows[n:]
	}
	return dst, recs, nil
}

// RowSeq returns the seq of the row rows starts with, if it starts with
// one: rows begin {"seq":N (docs/format.md §3).
func RowSeq(rows []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(rows, []byte(`{"seq":`))
	if !ok {
		return 0, false
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return 0, false
	}
	seq, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return seq, err == nil && seq >= 0
}

// Keys keeps the keyrings a store opened, one per sealed session, named
// by the head it was opened from (seal.Head.Fingerprint): a store opens
// an envelope once (a passphrase's costs a second), and the store that
// created a session reads it without an identity. It is safe for
// concurrent use.
type Keys struct {
	ids []age.Identity
	mu  sync.Mutex
	m   map[string]*entry
}

type entry struct {
	fp [32]byte
	kr *seal.Keyring
}

// NewKeys returns the keyrings of a store whose identities are ids.
func NewKeys(ids []age.Identity) *Keys { return &Keys{ids: ids} }

// Identities returns the store's identities.
func (k *Keys) Identities() []age.Identity { return k.ids }

// For returns the keyring of the sealed log whose head is h: the one
// kept, or a new one that has opened h's envelopes.
func (k *Keys) For(h seal.Head) *seal.Keyring {
	fp := h.Fingerprint()
	k.mu.Lock()
	e := k.m[h.Clear.ID]
	k.mu.Unlock()
	if e != nil && e.fp == fp {
		return e.kr
	}
	kr := seal.NewKeyring(h.Clear.ID, k.ids...)
	for _, env := range h.Envelopes {
		kr.Add(env) // outside mu: an envelope may take a second to open
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if e := k.m[h.Clear.ID]; e != nil && e.fp == fp {
		return e.kr // another goroutine got there first
	}
	if k.m == nil {
		k.m = map[string]*entry{}
	}
	k.m[h.Clear.ID] = &entry{fp: fp, kr: kr}
	return kr
}

// Remember keeps the data key p seals with in the keyring of the log p
// plans, and returns that keyring.
func (k *Keys) Remember(p *Plan) *seal.Keyring {
	kr := k.For(p.Head)
	kr.AddKey(p.Key)
	return kr
}

// Forget drops the keyring kept for session id (deleted, shredded).
func (k *Keys) Forget(id string) {
	k.mu.Lock()
	delete(k.m, id)
	k.mu.Unlock()
}

// SealBlob seals derived data of session id kept under key with the
// newest data key kr holds; an error wrapping seal.ErrNoKey when it holds
// none (nothing is then kept: never in clear).
func SealBlob(kr *seal.Keyring, id, key string, data []byte) ([]byte, error) {
	dk, ok := kr.Latest()
	if !ok {
		_, err := kr.Key(0)
		return nil, fmt.Errorf("handle: derived %q of sealed session %s is not kept: %w", key, id, err)
	}
	return dk.SealBlob(id, key, data)
}

// OpenBlob opens derived data of session id kept under key, sealed by
// SealBlob.
func OpenBlob(kr *seal.Keyring, id, key string, blob []byte) ([]byte, error) {
	k, ok := seal.BlobKey(blob)
	if !ok {
		return nil, seal.ErrBlob
	}
	dk, err := kr.Key(k)
	if err != nil {
		return nil, err
	}
	return dk.OpenBlob(id, key, blob)
}
