package handle

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/oklog/ulid/v2"
)

// labelIDDomain separates the hash of LabelID from any other hash of the
// same bytes. It is part of the name: changing it would lose every
// session found by its labels.
const labelIDDomain = "sessionlog/label-id/v1\n"

// LabelID is the ID of the session that labels name: the first 128 bits
// of SHA-256 over the labels' JSON (keys sorted), written as a ULID. It is
// a name, not a time: its time part means nothing. The same labels give
// the same ID in every process and every version, so a program that
// knows its labels (an agent's name and its task, say) knows its
// session's ID without having stored it anywhere. Labels must not be
// empty.
func LabelID(labels map[string]string) (string, error) {
	if len(labels) == 0 {
		return "", errors.New("handle: no labels to name a session by")
	}
	b, err := json.Marshal(labels) // keys sorted
	if err != nil {
		return "", fmt.Errorf("handle: labels: %w", err)
	}
	sum := sha256.Sum256(append([]byte(labelIDDomain), b...))
	var id ulid.ULID
	copy(id[:], sum[:16])
	return id.String(), nil
}
