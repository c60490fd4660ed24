package handle

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
)

// ErrHasDependents: Delete of a session that forks depend on, without
// Detach or Cascade; wrapped by *DependentsError.
var ErrHasDependents = errors.New("handle: other sessions fork from this one")

// DependentsError lists the forks that depend on a session.
type DependentsError struct {
	ID         string
	Dependents []string
	// Op is what was refused ("" for delete); Fix what would let it run
	// ("" for delete's: detach them or cascade).
	Op, Fix string
}

// Error implements error.
func (e *DependentsError) Error() string {
	op, fix := cmp.Or(e.Op, "delete"), cmp.Or(e.Fix, "detach them or cascade")
	return fmt.Sprintf("handle: cannot %s %s: %d fork(s) depend on it (%s); %s",
		op, e.ID, len(e.Dependents), strings.Join(e.Dependents, ", "), fix)
}

// Unwrap returns ErrHasDependents.
func (e *DependentsError) Unwrap() error { return ErrHasDependents }
