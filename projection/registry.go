package projection

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknown is wrapped by ByName's error for a name no built-in
// projection has.
var ErrUnknown = errors.New("projection: unknown projection")

// builtins are the built-in projections by the names people give them
// (logtool replay --projection, serve's /api/replay), the default first.
// verified: verify checks the state digests checkpoints carry of it.
var builtins = []struct {
	name     string
	make     func() Projection
	verified bool
}{
	{"transcript", func() Projection { return NewTranscript() }, true},
	{"agent", func() Projection { return NewAgent() }, true},
	{"conversation", func() Projection { return NewConversation() }, false},
}

// Names returns the names of the built-in projections, the default
// (transcript) first.
func Names() []string {
	out := make([]string, len(builtins))
	for i, b := range builtins {
		out[i] = b.name
	}
	return out
}

// ByName returns a fresh built-in projection by its name (Names), or an
// error wrapping ErrUnknown that lists the names there are.
func ByName(name string) (Projection, error) {
	for _, b := range builtins {
		if b.name == name {
			return b.make(), nil
		}
	}
	return nil, fmt.Errorf("%w %q: want %s", ErrUnknown, name, strings.Join(Names(), ", "))
}

// Verifiable returns fresh instances of the built-in projections whose
// state digests a verify checks (agent/v1, transcript/v1: the states the
// recorder and logtool checkpoint record); a checkpoint naming another is
// counted as not checked (docs/format.md §7).
func Verifiable() []Projection {
	var out []Projection
	for _, b := range builtins {
		if b.verified {
			out = append(out, b.make())
		}
	}
	return out
}
