package handle

import (
	"errors"
	"fmt"

	"github.com/sessionlog/sessionlog/handle/internal/lineage"
)

// ErrLineage: a fork whose parent is missing, or ends before the fork
// point; wrapped by *LineageError.
var ErrLineage = errors.New("handle: lineage broken")

// maxForkDepth bounds a chain of forks; a longer one is taken for a cycle.
const maxForkDepth = lineage.MaxDepth

// LineageError names the missing piece of a fork's logical log.
type LineageError struct {
	Path   string // the fork's file
	Parent string // the parent's ID
	Seq    int64  // the fork point
	Reason string
}

// Error implements error.
func (e *LineageError) Error() string {
	return fmt.Sprintf("handle: lineage of %q (forked from %s at seq %d): %s", e.Path, e.Parent, e.Seq, e.Reason)
}

// Unwrap returns ErrLineage.
func (e *LineageError) Unwrap() error { return ErrLineage }
