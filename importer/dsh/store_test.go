package dsh_test

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/importer/dsh"
)

// store writes s as a new raw session in the store folder dir (a test's
// temp folder) through the library's write path, runs of assistant/chunk
// packed as the store packs them, and returns the session's file.
func store(ctx context.Context, dir string, s dsh.Log) (string, error) {
	createdAt := time.UnixMilli(s.CreatedAt)
	st := file.New(afero.NewOsFs(), dir, func(c *handle.Config) { c.Now = func() time.Time { return createdAt } })
	h, err := st.Create(ctx, handle.WithID(s.ID), handle.WithLabels(s.Labels))
	if err != nil {
		return "", err
	}
	path := h.Path()
	if len(s.Events) > 0 {
		last, err := h.Append(ctx, s.Events...)
		if err != nil {
			h.Close()
			return "", err
		}
		if want := s.Events[len(s.Events)-1].Seq; last != want {
			h.Close()
			return "", fmt.Errorf("dsh: the store gave the last event seq %d, want %d", last, want)
		}
	}
	return path, h.Close()
}
