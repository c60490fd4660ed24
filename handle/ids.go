package handle

import (
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/sessionlog/sessionlog/eventlog"
)

// IDSource makes session IDs: ULIDs, monotonic within one source, so that
// sessions created in the same millisecond by one store still sort in
// creation order. Safe for concurrent use (ulid's monotonic entropy is
// not, so it is guarded). Every store makes its IDs with one.
type IDSource struct {
	mu      sync.Mutex
	entropy *ulid.MonotonicEntropy
}

// NewIDSource returns an IDSource drawing on crypto/rand.
func NewIDSource() *IDSource { return &IDSource{entropy: ulid.Monotonic(rand.Reader, 0)} }

// New returns a new session ID for time t.
func (s *IDSource) New(t time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), s.entropy)
	if err != nil {
		return "", fmt.Errorf("handle: new session ID: %w", err)
	}
	return id.String(), nil
}

// CheckID returns an error wrapping ErrInvalidID unless id is an
// upper-case ULID.
func CheckID(id string) error {
	if !eventlog.ValidID(id) {
		return fmt.Errorf("%w: %q (want 26 upper-case Crockford base32 characters)", ErrInvalidID, id)
	}
	return nil
}
