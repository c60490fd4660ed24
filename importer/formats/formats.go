// Package formats names the importers sessionlog ships: one registry of
// every built-in format, for callers that take a format by name (the
// `logtool import --from` flag). It knows the format sub-packages and
// nothing of where their sessions go.
package formats

import (
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/claude"
	"github.com/sessionlog/sessionlog/importer/codex"
	"github.com/sessionlog/sessionlog/importer/dsh"
	"github.com/sessionlog/sessionlog/importer/swe"
)

// All returns the importers of every built-in format.
func All() []importer.Importer {
	return []importer.Importer{claude.New(), codex.New(), dsh.New(), swe.New()}
}

// Registry returns a new registry of every built-in format. Each call
// builds its own: there is no process-wide registry to change.
func Registry() *importer.Registry {
	r, err := importer.NewRegistry(All()...)
	if err != nil {
		panic(err) // the built-in names are distinct: a test checks it
	}
	return r
}
