package handle

import (
	"context"
	"time"
)

// WithTicker replaces the ticker of FlushInterval (tests only): the test
// sends the ticks.
func WithTicker(ticks chan time.Time) Option {
	return func(c *config) {
		c.ticker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	}
}

// SealDerived returns the content of a derived file holding data (tests
// only): its sum line, then data.
func SealDerived(data []byte) []byte { return append(sealDerived(data), data...) }

// ForgetAcknowledged removes the store's evidence of what session id's
// writers acknowledged (tests only), as if its last write had never been
// acknowledged: tests that tear a write after closing its writer use it.
func ForgetAcknowledged(s *FileStore, id string) {
	for _, key := range []string{digestKey, ackedKey} {
		_ = s.DeleteDerived(context.Background(), id, key)
	}
}
