package core

import (
	"time"

	"github.com/sessionlog/sessionlog/handle"
)

// NewIDSource returns the store core's source of IDs (tests only).
func NewIDSource() interface {
	New(t time.Time) (string, error)
} {
	return newIDSource()
}

// TreeOf is the store core's arrangement of headers as a forest (tests
// only).
func TreeOf(infos []handle.Info) []*handle.Node { return treeOf(infos) }
