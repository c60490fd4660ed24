package golden

import (
	"bytes"
	"errors"
	"io/fs"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/projection"
)

// Status is what Check found, or with update did.
type Status string

// The statuses of Check. Without update: Match, Differs or Missing; with
// it: Created, Updated or Unchanged.
const (
	// Match: the golden holds the same JSON as the state.
	Match Status = "match"
	// Differs: the golden holds other JSON; Result.Mismatch says where.
	Differs Status = "differs"
	// Missing: there is no golden file.
	Missing Status = "missing"
	// Created: there was no golden file; it was written.
	Created Status = "created"
	// Updated: the golden held other bytes (other JSON, or only another
	// layout); it was rewritten.
	Updated Status = "updated"
	// Unchanged: the golden held the very bytes; it was left alone.
	Unchanged Status = "unchanged"
)

// Result is what Check found.
type Result struct {
	Status   Status
	Mismatch *Mismatch // with Differs: the first difference
}

// Option configures Check.
type Option func(*checkConfig)

type checkConfig struct{ fs afero.Fs }

// WithFs reads and writes golden files through fsys (default: the
// operating system's files).
func WithFs(fsys afero.Fs) Option { return func(c *checkConfig) { c.fs = fsys } }

// Check compares p's state (Marshal) with the golden file at path, or,
// with update, writes the state there when the file is missing or holds
// other bytes. It is the one check behind replaytest.Golden and
// `logtool replay --golden`, which differ only in how they report the
// Result. err is a failure to marshal the state or to read or write the
// file; a missing golden or a difference is a Result.
func Check(path string, p projection.Projection, update bool, opts ...Option) (Result, error) {
	c := checkConfig{fs: afero.NewOsFs()}
	for _, o := range opts {
		o(&c)
	}
	got, err := Marshal(p)
	if err != nil {
		return Result{}, err
	}
	want, err := afero.ReadFile(c.fs, path)
	missing := errors.Is(err, fs.ErrNotExist)
	var res Result
	switch {
	case err != nil && !missing:
		return Result{}, err
	case update && bytes.Equal(want, got) && !missing:
		return Result{Status: Unchanged}, nil
	case update:
		res.Status = Updated
		if missing {
			res.Status = Created
		}
		return res, afero.WriteFile(c.fs, path, got, 0o644)
	case missing:
		return Result{Status: Missing}, nil
	}
	if m := Compare(want, got); m != nil {
		return Result{Status: Differs, Mismatch: m}, nil
	}
	return Result{Status: Match}, nil
}
