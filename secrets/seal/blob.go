package seal

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
)

// Derived data of a sealed session — a cache entry, a stored replay
// state, a saved digest state — must not be written in clear (docs/format.md
// §11): a store seals each such blob under the session's data key. A
// blob is "SLBLOB01", the key's number (4 bytes, big endian), a random
// nonce, the ciphertext and the tag; it is authenticated with the
// session and its purpose (the cache entry's name), so that a blob cannot
// stand in for another.

var blobMagic = []byte("SLBLOB01")

// ErrBlob is returned by OpenBlob for a blob that is damaged, of another
// session or purpose, or sealed with another key: derived data, to be
// rebuilt.
var ErrBlob = errors.New("seal: sealed blob does not open")

// SealBlob seals plain, derived data of session kept for purpose.
func (k *DataKey) SealBlob(session, purpose string, plain []byte) ([]byte, error) {
	var nonce [nonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("seal: a random nonce: %w", err)
	}
	out := make([]byte, 0, len(blobMagic)+4+nonceSize+len(plain)+tagSize)
	out = append(out, blobMagic...)
	out = binary.BigEndian.AppendUint32(out, k.id)
	out = append(out, nonce[:]...)
	return k.aead.Seal(out, nonce[:], plain, blobAAD(session, purpose)), nil
}

// BlobKey returns the number of the data key a blob was sealed with.
func BlobKey(blob []byte) (uint32, bool) {
	if len(blob) < len(blobMagic)+4+nonceSize+tagSize || !bytes.HasPrefix(blob, blobMagic) {
		return 0, false
	}
	return binary.BigEndian.Uint32(blob[len(blobMagic):]), true
}

// OpenBlob opens a blob SealBlob made for session and purpose.
func (k *DataKey) OpenBlob(session, purpose string, blob []byte) ([]byte, error) {
	id, ok := BlobKey(blob)
	if !ok || id != k.id {
		return nil, ErrBlob
	}
	b := blob[len(blobMagic)+4:]
	plain, err := k.aead.Open(nil, b[:nonceSize], b[nonceSize:], blobAAD(session, purpose))
	if err != nil {
		return nil, ErrBlob
	}
	return plain, nil
}

func blobAAD(session, purpose string) []byte {
	return []byte("sessionlog-sealed/1 blob\x00" + session + "\x00" + purpose)
}
