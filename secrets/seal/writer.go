package seal

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// ErrKeyFull is returned when a data key has sealed MaxRecordsPerKey
// records: the writer must rotate to a new key first.
var ErrKeyFull = errors.New("seal: data key has sealed its limit of records; rotate it")

// Sealer seals the plaintext of one session's log as it is written: its
// header row first, then its rows (raw) or frames (zstd). Each record is
// sealed with AES-256-GCM under the current data key, with a random
// 96-bit nonce. A Sealer is not safe for concurrent use: a writer has one.
type Sealer struct {
	session string
	enc     Encoding
	key     *DataKey
	count   uint64 // records sealed under key
	header  bool   // the next record is the header row
	ad      []byte
}

// NewSealer returns a Sealer of a new file of session: the first record
// it seals is the header row (raw: the first line given to AppendRows;
// zstd: the first frame given to AppendFrame).
func NewSealer(session string, enc Encoding, key *DataKey) *Sealer {
	return &Sealer{session: session, enc: enc, key: key, header: true}
}

// ResumeSealer returns a Sealer that appends to an existing file, whose
// current key has sealed sealed records already (Reader.KeyUse).
func ResumeSealer(session string, enc Encoding, key *DataKey, sealed uint64) *Sealer {
	return &Sealer{session: session, enc: enc, key: key, count: sealed}
}

// Rotate makes key the current data key: the records sealed after it use
// it. Its key records must be in the file before them.
func (s *Sealer) Rotate(key *DataKey) { s.key, s.count = key, 0 }

// Key returns the current data key.
func (s *Sealer) Key() *DataKey { return s.key }

// Full reports whether the current key has sealed n more records short of
// its limit.
func (s *Sealer) Full(n uint64) bool { return s.count+n > MaxRecordsPerKey }

// seal appends nonce, ciphertext and tag of plain to dst.
func (s *Sealer) seal(dst, plain []byte) ([]byte, error) {
	if s.count >= MaxRecordsPerKey {
		return dst, ErrKeyFull
	}
	var nonce [nonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return dst, fmt.Errorf("seal: a random nonce: %w", err)
	}
	s.ad = aad(s.ad[:0], s.session, s.enc, s.key.id, s.header)
	dst = append(dst, nonce[:]...)
	dst = s.key.aead.Seal(dst, nonce[:], plain, s.ad)
	s.header = false
	s.count++
	return dst, nil
}

// AppendRows appends one sealed line per row of rows (each ending in
// '\n'; the first row of a new file is its header row) to dst.
func (s *Sealer) AppendRows(dst, rows []byte) ([]byte, error) {
	if s.enc != Raw {
		return dst, errors.New("seal: AppendRows on a zstd sealer")
	}
	var sealed []byte
	for len(rows) > 0 {
		i := bytes.IndexByte(rows, '\n')
		if i < 0 {
			return dst, errors.New("seal: a row without its newline")
		}
		var err error
		if sealed, err = s.seal(sealed[:0], rows[:i]); err != nil {
			return dst, err
		}
		dst = append(dst, `{"k":`...)
		dst = strconv.AppendUint(dst, uint64(s.key.id), 10)
		dst = append(dst, `,"s":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, sealed)
		dst = append(dst, "\"}\n"...)
		rows = rows[i+1:]
	}
	return dst, nil
}

// AppendFrame appends the sealed frame of one zstd frame (compressed
// already, with its content checksum; the first of a new file holds the
// header row) to dst.
func (s *Sealer) AppendFrame(dst, frame []byte) ([]byte, error) {
	if s.enc != Zstd {
		return dst, errors.New("seal: AppendFrame on a raw sealer")
	}
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, magicSealed)
	dst = binary.LittleEndian.AppendUint32(dst, 0) // the size, set below
	dst = binary.BigEndian.AppendUint32(dst, s.key.id)
	dst, err := s.seal(dst, frame)
	if err != nil {
		return dst[:start], err
	}
	binary.LittleEndian.PutUint32(dst[start+4:], uint32(len(dst)-start-8))
	return dst, nil
}
