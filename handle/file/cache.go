package file

import (
	"strconv"
	"time"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/core"
	"github.com/spf13/afero"

	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessionlog/sessionlog/handle/internal/sealing"
)

// cacheDir is the folder of derived data in a store's folder: digest
// states, snapshots. Everything in it can be deleted while no process uses
// the store; it is rebuilt by reading the logs.
const cacheDir = ".cache"

// A derived file holds a line "sha256:<hex>\n", the sha256 of the data
// that follows it, then the data. Derived files are not fsynced, and their
// readers trust data that is well formed and matches the log (a digest
// state, a header, a stored state): a file whose data does not match its
// sum (damaged, cut short or zero-filled by a power cut, or written by an
// older version) reads as absent, and is rebuilt. The sum detects damage,
// not forgery: whoever may write the store's folder may write its logs.
const sumPrefix = "sha256:"

// sealDerived returns the sum line of a derived file holding data.
func sealDerived(data []byte) []byte {
	sum := sha256.Sum256(data)
	return append(hex.AppendEncode([]byte(sumPrefix), sum[:]), '\n')
}

// openDerived returns the data of a derived file, and false when it does
// not match its sum line.
func openDerived(b []byte) ([]byte, bool) {
	head, data, ok := bytes.Cut(b, []byte{'\n'})
	if !ok || !bytes.Equal(sealDerived(data), b[:len(head)+1]) {
		return nil, false
	}
	return data, true
}

// validKey reports whether a cache key is safe as a file name part.
func validKey(key string) bool {
	if key == "" || len(key) > 128 {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') || (c == '.' && i == 0) {
			return false
		}
	}
	return true
}

func (s *Store) cachePath(id, key string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	if !validKey(key) {
		return "", fmt.Errorf("handle: invalid cache key %q", key)
	}
	return filepath.Join(s.dir, cacheDir, id+"."+key), nil
}

// GetDerived returns derived data kept for session id under key, or
// ErrNotFound, also when the file that kept it is damaged (see
// sealDerived). Derived data is a cache: callers check that it matches the
// log before they trust it.
func (s *Store) GetDerived(ctx context.Context, id, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := s.cachePath(id, key)
	if err != nil {
		return nil, err
	}
	b, err := readRegular(s.fs, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no derived %q for %s", handle.ErrNotFound, key, id)
	}
	if err != nil {
		return nil, err
	}
	data, ok := openDerived(b)
	if !ok {
		return nil, fmt.Errorf("%w: derived %q for %s is damaged", handle.ErrNotFound, key, id)
	}
	sf, err := s.derivedSeal(ctx, id)
	if err != nil || sf == nil {
		return data, err
	}
	if data, err = sealing.OpenBlob(sf.kr, id, key, data); err != nil {
		return nil, fmt.Errorf("%w: derived %q for %s: %w", handle.ErrNotFound, key, id, err)
	}
	return data, nil
}

// derivedSeal returns the head and keyring of session id's log when it
// is sealed, nil when it is clear or there is none: derived data of a
// sealed session is sealed (docs/format.md §11), each blob under a data
// key of the session, authenticated with its key (seal.SealBlob).
func (s *Store) derivedSeal(ctx context.Context, id string) (*sealedFile, error) {
	loc, err := s.locate(ctx, id)
	if errors.Is(err, handle.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := s.openLog(ctx, &loc, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f.Close()
	return loc.sealed, nil
}

// PutDerived keeps derived data for session id under key, replacing what
// was there (temp file and rename: a reader sees the old or the new data).
// It is not fsynced: derived data can always be rebuilt.
func (s *Store) PutDerived(ctx context.Context, id, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := s.cachePath(id, key)
	if err != nil {
		return err
	}
	sf, err := s.derivedSeal(ctx, id)
	if err != nil {
		return err
	}
	if err := s.recordKey(id, key); err != nil {
		return err
	}
	if sf != nil {
		if data, err = sealing.SealBlob(sf.kr, id, key, data); err != nil {
			return err
		}
	}
	return s.writeDerived(p, data)
}

// writeDerived writes the derived file at path: its sum line and data,
// through a temp file of its own and a rename, so a reader sees the old
// file or the new one. It is not fsynced. Nothing is written through a
// link: the cache folder must be a folder, and the temp file is new.
func (s *Store) writeDerived(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := checkFolder(s.fs, dir); err != nil {
		return fmt.Errorf("handle: cache folder: %w", err)
	}
	if err := s.fs.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("handle: cache folder: %w", err)
	}
	if err := replaceFile(s.fs, path, strconv.FormatInt(time.Now().UnixNano(), 10), sealDerived(data), data); err != nil {
		return fmt.Errorf("handle: cache %q: %w", path, err)
	}
	return nil
}

// replaceFile writes parts, in order, to a new temp file beside path
// (named with nonce) and renames it over path, so that a reader sees the
// old file or the new one; the temp file is removed when anything fails.
// It is not fsynced: what it writes is derived.
func replaceFile(fsys afero.Fs, path, nonce string, parts ...[]byte) error {
	tmp := path + "." + nonce + tmpExt
	f, err := openRegular(fsys, tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, false)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			break
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		fsys.Remove(tmp)
	}
	return err
}

// ownKeys are the keys of the derived data the store itself keeps of a
// session; keysKey names the record of the others' (recordKey).
var ownKeys = []string{ackedKey, checkedKey, core.DigestKey, core.DigestsKey}

const keysKey = "keys"

// recordKey adds key to session id's record of the keys its derived data
// is kept under, before that data is written, so that Delete removes it
// without listing the cache folder (dropKnownDerived). The store's own
// keys are not recorded.
func (s *Store) recordKey(id, key string) error {
	if slices.Contains(ownKeys, key) {
		return nil
	}
	p, err := s.cachePath(id, keysKey)
	if err != nil {
		return err
	}
	if b, err := readRegular(s.fs, p); err == nil && slices.Contains(strings.Split(string(b), "\n"), key) {
		return nil
	}
	if err := checkFolder(s.fs, filepath.Dir(p)); err != nil {
		return fmt.Errorf("handle: cache folder: %w", err)
	}
	if err := s.fs.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("handle: cache folder: %w", err)
	}
	f, err := openRegular(s.fs, p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, false)
	if err != nil {
		return fmt.Errorf("handle: cache %q: %w", p, err)
	}
	_, err = f.Write([]byte(key + "\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// dropKnownDerived removes the derived files of session id that its
// store keeps and its record of keys names (Delete: no listing of the
// cache folder, whose size grows with the store). A file its record
// misses (written by an older version) is GC's leftover.
func (s *Store) dropKnownDerived(id string) {
	kp, err := s.cachePath(id, keysKey)
	if err != nil {
		return
	}
	keys := slices.Clone(ownKeys)
	if b, err := readRegular(s.fs, kp); err == nil {
		for _, k := range strings.Split(string(b), "\n") {
			if validKey(k) {
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		if p, err := s.cachePath(id, k); err == nil {
			s.fs.Remove(p)
		}
	}
	s.fs.Remove(kp)
}

// dropDerived removes every derived file of session id, and the evidence
// the change under way would leave (noteAcked).
func (s *Store) dropDerived(id string) {
	s.noteAcked(id, 0)
	matches, _ := filepathGlob(s, filepath.Join(s.dir, cacheDir, id+".*"))
	for _, m := range matches {
		s.fs.Remove(m)
	}
}

// DeleteDerived removes derived data kept for session id under key; it is
// not an error when there is none.
func (s *Store) DeleteDerived(ctx context.Context, id, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := s.cachePath(id, key)
	if err != nil {
		return err
	}
	if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("handle: cache %q: %w", p, err)
	}
	return nil
}
