package handle

import (
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/sessionlog/sessionlog/eventlog"
)

// idSource makes session IDs: ULIDs, monotonic within one source, so that
// sessions created in the same millisecond by one store still sort in
// creation order. Safe for concurrent use (ulid's monotonic entropy is
// not, so it is guarded). The store core makes every store's IDs with one.
type idSource struct {
	mu      sync.Mutex
	entropy *ulid.MonotonicEntropy
}

// newIDSource returns an idSource drawing on crypto/rand.
func newIDSource() *idSource { return &idSource{entropy: ulid.Monotonic(rand.Reader, 0)} }

// New returns a new session ID for time t.
func (s *idSource) New(t time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), s.entropy)
	if err != nil {
		return "", fmt.Errorf("handle: new session ID: %w", err)
	}
	return id.String(), nil
}

// checkID returns an error wrapping ErrInvalidID unless id is an
// upper-case ULID.
func checkID(id string) error {
	if !eventlog.ValidID(id) {
		return fmt.Errorf("%w: %q (want 26 upper-case Crockford base32 characters)", ErrInvalidID, id)
	}
	return nil
}
