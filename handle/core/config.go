package core

import (
	"log/slog"
	"time"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// NewConfig returns the settings opts make over the defaults every store
// starts from: a silent logger, the real clock, raw logs, redaction at
// write on (redact.New()), explicit flushes. A backend reads its store's
// settings from it, and gives them to NewStore.
func NewConfig(opts ...handle.Option) handle.Config {
	c := handle.Config{
		Logger:   slog.New(slog.DiscardHandler),
		Now:      time.Now,
		Encoding: handle.EncodingRaw,
		Redactor: redact.New(),
	}
	for _, o := range opts {
		o(&c)
	}
	if len(c.Recipients) == 0 {
		c.Recipients = nil // a store's: no default; a call's: asks (Create refuses)
	}
	return c
}
