package sealing

import (
	"slices"

	"filippo.io/age"

	"github.com/sessionlog/sessionlog/secrets/seal"
)

// KeyIDs returns the data keys envs wrap, in order, each once.
func KeyIDs(envs []seal.Envelope) []uint32 {
	var out []uint32
	for _, e := range envs {
		if !slices.Contains(out, e.Key) {
			out = append(out, e.Key)
		}
	}
	slices.Sort(out)
	return out
}

// WrapAll returns the key records, in layout, that wrap every data key
// envs name (each held by kr) for rs: AddRecipients' records. path names
// the log in a missing key's error.
func WrapAll(id string, kr *seal.Keyring, envs []seal.Envelope, layout seal.Encoding, path string, rs ...age.Recipient) ([]byte, error) {
	var recs []byte
	for _, k := range KeyIDs(envs) {
		key, err := kr.Key(k)
		if err != nil {
			return nil, NoKey(err, path)
		}
		if recs, err = appendWrapped(recs, id, key, k, layout, rs); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// Rotate makes the data key after the newest envs name, adds it to kr
// (its writer seals under it next) and returns its key records, in
// layout, for rs: RotateKey's records.
func Rotate(id string, kr *seal.Keyring, envs []seal.Envelope, layout seal.Encoding, rs ...age.Recipient) ([]byte, error) {
	next := Newest(envs) + 1
	key, err := seal.NewKey(next)
	if err != nil {
		return nil, err
	}
	recs, err := appendWrapped(nil, id, key, next, layout, rs)
	if err != nil {
		return nil, err
	}
	kr.AddKey(key)
	return recs, nil
}

// appendWrapped appends to recs the key records of key k wrapped for rs.
func appendWrapped(recs []byte, id string, key *seal.DataKey, k uint32, layout seal.Encoding, rs []age.Recipient) ([]byte, error) {
	wrapped, err := seal.Wrap(id, key, rs...)
	if err != nil {
		return nil, err
	}
	for _, w := range wrapped {
		recs = seal.AppendKeyRecord(recs, layout, k, w)
	}
	return recs, nil
}
