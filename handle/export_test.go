package handle

import "time"

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
